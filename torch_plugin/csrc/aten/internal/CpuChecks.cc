#include "csrc/aten/internal/CpuChecks.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

namespace torch_neuronx::internal {

void CheckNumbersAsTheCpuDoes(const c10::OperatorHandle& op, const OpInfo& info,
                              const torch::jit::Stack& arguments) {
  if (!info.checks_numbers_on_cpu) return;
  torch::jit::Stack on_cpu;
  on_cpu.reserve(arguments.size());
  const at::Tensor& self = arguments[0].toTensor();
  on_cpu.emplace_back(at::empty({0}, self.options().device(at::kCPU)));
  for (size_t i = 1; i < arguments.size(); ++i) {
    if (info.kinds[i] == ArgKind::kGenerator) {
      on_cpu.emplace_back();
    } else {
      on_cpu.push_back(arguments[i]);
    }
  }
  op.callBoxed(on_cpu);
}

}  // namespace torch_neuronx::internal

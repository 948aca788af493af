#include "daemon/hal/sim/internal/nki_graph_call.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_format.h"
#include "daemon/hal/sim/nki/nki_interpreter.h"

namespace neuron::rtd::hal::sim::internal {
namespace {

// The HBM allocation at each address index the kernel uses (the first, when
// several share one).
std::vector<const NkiAllocation*> ByAddress(const NkiKernelPlan& kernel) {
  std::vector<const NkiAllocation*> by_address;
  for (const NkiAllocation& allocation : kernel.allocations) {
    if (allocation.space != NkiSpace::kHbm) continue;
    if (allocation.address_index >= by_address.size()) {
      by_address.resize(allocation.address_index + 1, nullptr);
    }
    if (by_address[allocation.address_index] == nullptr) {
      by_address[allocation.address_index] = &allocation;
    }
  }
  return by_address;
}

}  // namespace

absl::StatusOr<NkiGraphCall> PrepareNkiGraphCall(const GraphPlan& plan, const GraphNode& node) {
  const auto* index = node.arguments.size() == 2 ? std::get_if<int64_t>(&node.arguments[0])
                                                 : nullptr;
  const auto* values = node.arguments.size() == 2 ? std::get_if<GraphValues>(&node.arguments[1])
                                                  : nullptr;
  if (index == nullptr || values == nullptr) {
    return absl::InvalidArgumentError(
        "nki::call takes a kernel index and a list of graph values");
  }
  if (*index < 0 || static_cast<uint64_t>(*index) >= plan.nki_kernels.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "nki::call names kernel %d; the graph has %d", *index, plan.nki_kernels.size()));
  }
  NkiGraphCall call{.kernel = static_cast<uint32_t>(*index),
                    .bound = static_cast<uint32_t>(values->size()),
                    .results = {}};
  const NkiKernelPlan& kernel = plan.nki_kernels[call.kernel];
  const std::vector<const NkiAllocation*> by_address = ByAddress(kernel);
  if (call.bound > by_address.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "nki::call binds %d values; kernel '%s' has %d HBM addresses", call.bound, kernel.name,
        by_address.size()));
  }
  std::vector<bool> written(by_address.size(), false);
  for (const NkiInstruction& instruction : kernel.instructions) {
    for (size_t i = 0; i < instruction.operands.size(); ++i) {
      const std::optional<NkiAccess>& operand = instruction.operands[i];
      if (!operand || !NkiWritesOperand(instruction, i)) continue;
      const NkiAllocation& allocation = kernel.allocations[operand->allocation];
      if (allocation.space == NkiSpace::kHbm) written[allocation.address_index] = true;
    }
  }
  for (uint32_t address = 0; address < by_address.size(); ++address) {
    if (by_address[address] == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "kernel '%s' uses no HBM tensor at address %d", kernel.name, address));
    }
    if (written[address]) call.results.push_back(address);
  }
  if (node.return_lengths.size() != 1 ||
      node.return_lengths[0] != static_cast<int32_t>(call.results.size())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "nki::call of kernel '%s' returns a list of the %d HBM tensors it writes",
        kernel.name, call.results.size()));
  }
  return call;
}

absl::StatusOr<std::vector<at::Tensor>> RunNkiGraphCall(const GraphPlan& plan,
                                                        const NkiGraphCall& call,
                                                        std::span<const at::Tensor> arguments) {
  const NkiKernelPlan& kernel = plan.nki_kernels[call.kernel];
  const std::vector<const NkiAllocation*> by_address = ByAddress(kernel);
  std::vector<at::Tensor> tensors(by_address.size());
  for (uint32_t address = 0; address < by_address.size(); ++address) {
    const NkiAllocation& allocation = *by_address[address];
    const auto dtype = static_cast<at::ScalarType>(allocation.dtype);
    const bool written = std::binary_search(call.results.begin(), call.results.end(), address);
    if (address < call.bound) {
      const at::Tensor& argument = arguments[address];
      if (!argument.defined() || argument.scalar_type() != dtype ||
          argument.numel() < allocation.elements) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "NKI kernel '%s' argument %d ('%s') must hold %d elements of %s", kernel.name,
            address, allocation.name, allocation.elements, c10::toString(dtype)));
      }
      tensors[address] = written ? argument.clone(at::MemoryFormat::Contiguous)
                                 : argument.contiguous();
      continue;
    }
    std::vector<int64_t> shape = allocation.shape;
    if (shape.empty()) shape = {allocation.elements};
    tensors[address] = at::empty(shape, at::TensorOptions().dtype(dtype));
  }
  std::vector<nki::NkiHbmBuffer> buffers;
  buffers.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) {
    buffers.push_back({.data = tensor.data_ptr(), .bytes = tensor.nbytes()});
  }
  if (absl::Status status = nki::RunNkiKernel(kernel, buffers,
                                              nki::ThreadCoreMemory(kernel.target));
      !status.ok()) {
    return status;
  }
  std::vector<at::Tensor> results;
  results.reserve(call.results.size());
  for (uint32_t address : call.results) results.push_back(std::move(tensors[address]));
  return results;
}

}  // namespace neuron::rtd::hal::sim::internal

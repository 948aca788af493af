#include "daemon/hal/sim/nki/nki_executable.h"

#include <vector>

#include "absl/strings/str_format.h"
#include "daemon/hal/device.h"
#include "daemon/hal/sim/launch_host_budget.h"
#include "daemon/hal/sim/nki/nki_interpreter.h"

namespace neuron::rtd::hal::sim {
namespace {

class NkiExecutable final : public SimExecutable {
 public:
  explicit NkiExecutable(NkiKernelPlan plan) : plan_(std::move(plan)) {}

  absl::Status Run(HbmArena& arena, std::span<const uint64_t> bindings,
                   std::span<const uint8_t> /*immediates*/,
                   const LaunchSettings& settings) const override {
    std::vector<nki::NkiHbmBuffer> hbm(bindings.size());
    for (const NkiAllocation& allocation : plan_.allocations) {
      if (allocation.space != NkiSpace::kHbm || allocation.elements == 0) continue;
      if (allocation.address_index >= bindings.size()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "NKI kernel '%s' reads address %d; the launch has %d", plan_.name,
            allocation.address_index, bindings.size()));
      }
      const uint64_t bytes =
          static_cast<uint64_t>(allocation.elements) * NkiElementBytes(allocation.dtype);
      absl::StatusOr<void*> data = arena.HostPointer(bindings[allocation.address_index], bytes);
      if (!data.ok()) return data.status();
      hbm[allocation.address_index] = nki::NkiHbmBuffer{.data = *data, .bytes = bytes};
    }
    // The interpreter's float32 copies of operands (a DMA between HBM
    // tensors copies it whole) count against the launch's host budget.
    LaunchHostBudget budget(settings.max_host_bytes);
    absl::Status status = nki::RunNkiKernel(plan_, hbm, nki::ThreadCoreMemory(plan_.target));
    if (status.code() == absl::StatusCode::kInvalidArgument) {
      status.SetPayload(kOperatorErrorTypePayload, absl::Cord("ValueError"));
    } else if (status.code() == absl::StatusCode::kResourceExhausted) {
      status.SetPayload(kOperatorErrorTypePayload, absl::Cord("OutOfMemoryError"));
    }
    return status;
  }

 private:
  const NkiKernelPlan plan_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SimExecutable>> PrepareNkiExecutable(const NkiKernelPlan& plan) {
  return std::make_unique<NkiExecutable>(plan);
}

}  // namespace neuron::rtd::hal::sim

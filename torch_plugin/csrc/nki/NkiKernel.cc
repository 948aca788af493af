#include "csrc/nki/NkiKernel.h"

#include <c10/util/Exception.h>

#include <string>

#include "csrc/runtime/NeuronFunctions.h"
#include "daemon/hal/sim/nki/nki_interpreter.h"

namespace torch_neuronx {
namespace {

namespace rtd = neuron::rtd;

// Checks that each HBM allocation's tensor is there, where it must be, and
// large enough.
void CheckBuffers(const rtd::NkiKernelPlan& plan, const std::vector<at::Tensor>& hbm,
                  c10::DeviceType type) {
  for (const rtd::NkiAllocation& allocation : plan.allocations) {
    if (allocation.space != rtd::NkiSpace::kHbm) continue;
    TORCH_CHECK_VALUE(allocation.address_index < hbm.size() &&
                          hbm[allocation.address_index].defined(),
                      "NKI kernel '", plan.name, "': no tensor for '", allocation.name, "'");
    const at::Tensor& tensor = hbm[allocation.address_index];
    TORCH_CHECK_VALUE(tensor.device().type() == type, "NKI kernel '", plan.name, "': '",
                      allocation.name, "' is on ", tensor.device());
    const int64_t available =
        (static_cast<int64_t>(tensor.storage().nbytes()) -
         tensor.storage_offset() * static_cast<int64_t>(tensor.element_size())) /
        static_cast<int64_t>(rtd::NkiElementBytes(allocation.dtype));
    TORCH_CHECK_VALUE(available >= allocation.elements, "NKI kernel '", plan.name, "': '",
                      allocation.name, "' needs ", allocation.elements, " elements; its storage has ",
                      available);
  }
}

}  // namespace

uint64_t LoadNkiKernel(const rtd::NkiKernelPlan& plan) {
  absl::StatusOr<uint64_t> id = GetRuntime().session().LoadNkiKernel(plan, plan.name);
  ThrowIfError(id.status(), "loading NKI kernel '" + plan.name + "' into neuron-rtd");
  return *id;
}

void LaunchNkiKernel(uint64_t executable_id, const rtd::NkiKernelPlan& plan,
                     const std::vector<at::Tensor>& hbm, c10::DeviceIndex device, bool wait) {
  CheckBuffers(plan, hbm, c10::DeviceType::PrivateUse1);
  std::vector<uint64_t> addresses(hbm.size(), 0);
  for (size_t i = 0; i < hbm.size(); ++i) {
    if (!hbm[i].defined()) continue;
    TORCH_CHECK_VALUE(hbm[i].device().index() == device, "NKI kernel '", plan.name,
                      "' runs on neuron:", device, "; argument ", i, " is on ", hbm[i].device());
    addresses[i] = reinterpret_cast<uint64_t>(hbm[i].data_ptr());
  }
  neuronrt::Stream& stream = RuntimeStream(CurrentStream(device));
  ThrowIfError(stream.Launch(executable_id, addresses, {}, plan.name).status(),
               "NKI kernel '" + plan.name + "'");
  if (wait) ThrowIfError(stream.Synchronize(), "NKI kernel '" + plan.name + "'");
}

void SimulateNkiKernel(const rtd::NkiKernelPlan& plan, const std::vector<at::Tensor>& hbm) {
  const std::string bad = rtd::CheckNkiKernel(plan);
  TORCH_CHECK_VALUE(bad.empty(), "NKI kernel '", plan.name, "': ", bad);
  CheckBuffers(plan, hbm, c10::DeviceType::CPU);
  std::vector<rtd::nki::NkiHbmBuffer> buffers(hbm.size());
  for (size_t i = 0; i < hbm.size(); ++i) {
    if (!hbm[i].defined()) continue;
    buffers[i] = rtd::nki::NkiHbmBuffer{
        .data = hbm[i].data_ptr(),
        .bytes = hbm[i].storage().nbytes() - hbm[i].storage_offset() * hbm[i].element_size()};
  }
  ThrowIfError(rtd::nki::RunNkiKernel(plan, buffers, rtd::nki::ThreadCoreMemory(plan.target)),
               "nki.simulate");
}

}  // namespace torch_neuronx

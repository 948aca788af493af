// What the PyTorch side of the backend asks of the runtime: the runtime
// itself (errors become c10 exceptions), the current device and the current
// stream of each device (thread-local, as in CUDA).
#ifndef TORCH_NEURONX_CSRC_RUNTIME_NEURON_FUNCTIONS_H_
#define TORCH_NEURONX_CSRC_RUNTIME_NEURON_FUNCTIONS_H_

#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <string_view>

#include "absl/status/status.h"
#include "csrc/runtime/Runtime.h"

namespace torch_neuronx {

// Throws a c10::Error naming `what` when `status` is not OK; RESOURCE_EXHAUSTED
// becomes torch.OutOfMemoryError, INVALID_ARGUMENT ValueError.
void ThrowIfError(const absl::Status& status, std::string_view what);

// The runtime, opened on first use; throws when no daemon can be reached.
Runtime& GetRuntime();

// Devices visible to the process; 0 (never an exception) when the daemon
// cannot be reached.
c10::DeviceIndex DeviceCountNoThrow() noexcept;

c10::DeviceIndex CurrentDevice();
void SetCurrentDevice(c10::DeviceIndex device);
// Throws naming the device when it does not exist.
void CheckDevice(c10::DeviceIndex device);

// The thread's current stream of `device` (the default stream unless set).
c10::Stream CurrentStream(c10::DeviceIndex device);
void SetCurrentStream(const c10::Stream& stream);
c10::Stream DefaultStream(c10::DeviceIndex device);
// The runtime stream behind a c10::Stream of this backend.
neuronrt::Stream& RuntimeStream(const c10::Stream& stream);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_RUNTIME_NEURON_FUNCTIONS_H_

#include "csrc/runtime/NeuronFunctions.h"

#include <c10/util/Exception.h>

#include <array>

#include "absl/strings/cord.h"
#include "absl/strings/str_format.h"
#include "neuronrt/session.h"

namespace torch_neuronx {
namespace {

constexpr int kMaxDevices = 64;

thread_local c10::DeviceIndex current_device = 0;
// Stream id per device; 0 is the default stream.
thread_local std::array<c10::StreamId, kMaxDevices> current_streams{};

}  // namespace

void ThrowIfError(const absl::Status& status, std::string_view what) {
  if (status.ok()) return;
  const std::string message =
      absl::StrFormat("%s: %s", what, std::string_view(status.message().data(), status.message().size()));
  // An operator's own error: the exception type the CPU raises for it.
  if (const auto type = status.GetPayload(neuronrt::kOperatorErrorTypePayload); type.has_value()) {
    const std::string name(*type);
    if (name == "IndexError") TORCH_CHECK_INDEX(false, message);
    if (name == "ValueError") TORCH_CHECK_VALUE(false, message);
    if (name == "TypeError") TORCH_CHECK_TYPE(false, message);
    if (name == "NotImplementedError") TORCH_CHECK_NOT_IMPLEMENTED(false, message);
    if (name == "LinAlgError") TORCH_CHECK_LINALG(false, message);
    if (name == "OutOfMemoryError") TORCH_CHECK_WITH(OutOfMemoryError, false, message);
    TORCH_CHECK(false, message);
  }
  // A fault that poisoned a stream surfaces asynchronously, as CUDA's do.
  if (status.GetPayload(neuronrt::kStreamFaultPayload).has_value()) {
    throw c10::AcceleratorError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                                static_cast<int32_t>(status.code()), message);
  }
  switch (status.code()) {
    case absl::StatusCode::kResourceExhausted:
      TORCH_CHECK_WITH(OutOfMemoryError, false, message);
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      TORCH_CHECK_VALUE(false, message);
    default:
      TORCH_CHECK(false, message);
  }
}

Runtime& GetRuntime() {
  if (Runtime* runtime = Runtime::GetIfOpen()) return *runtime;
  absl::StatusOr<Runtime*> runtime = Runtime::Get();
  ThrowIfError(runtime.status(), "neuron device unavailable");
  return **runtime;
}

c10::DeviceIndex DeviceCountNoThrow() noexcept {
  absl::StatusOr<Runtime*> runtime = Runtime::Get();
  if (!runtime.ok()) return 0;
  return static_cast<c10::DeviceIndex>(std::min((*runtime)->device_count(), kMaxDevices));
}

void CheckDevice(c10::DeviceIndex device) {
  const int count = std::min(GetRuntime().device_count(), kMaxDevices);
  TORCH_CHECK_VALUE(device >= 0 && device < count, "neuron:", static_cast<int>(device),
                    " does not exist; this process sees ", count,
                    " neuron device(s) (NEURON_RT_VISIBLE_CORES selects them)");
}

c10::DeviceIndex CurrentDevice() { return current_device; }

void SetCurrentDevice(c10::DeviceIndex device) {
  CheckDevice(device);
  current_device = device;
}

c10::Stream CurrentStream(c10::DeviceIndex device) {
  if (device < 0) device = current_device;
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device),
                     current_streams[device]);
}

void SetCurrentStream(const c10::Stream& stream) {
  current_streams[stream.device_index()] = stream.id();
}

c10::Stream DefaultStream(c10::DeviceIndex device) {
  if (device < 0) device = current_device;
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), 0);
}

neuronrt::Stream& RuntimeStream(const c10::Stream& stream) {
  absl::StatusOr<neuronrt::Stream*> runtime_stream =
      GetRuntime().stream(stream.device_index(), stream.id());
  ThrowIfError(runtime_stream.status(), "neuron stream");
  return **runtime_stream;
}

}  // namespace torch_neuronx

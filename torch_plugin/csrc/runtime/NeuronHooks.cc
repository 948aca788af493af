// The PrivateUse1 hooks: availability (never throws), generators, pinned
// memory, the device of a pointer, storage resize.
#include <ATen/detail/PrivateUse1HooksInterface.h>

#include "csrc/runtime/NeuronAllocator.h"
#include "csrc/runtime/NeuronFunctions.h"
#include "csrc/runtime/NeuronGenerator.h"
#include "csrc/runtime/PinnedMemory.h"

namespace torch_neuronx {
namespace {

class NeuronHooks final : public at::PrivateUse1HooksInterface {
 public:
  bool isBuilt() const override { return true; }
  // Never opens a session: PyTorch asks while tracing CPU-only programs.
  bool isAvailable() const override {
    Runtime* runtime = Runtime::GetIfOpen();
    return runtime != nullptr ? runtime->device_count() > 0 : Runtime::Reachable();
  }
  c10::DeviceIndex deviceCount() const override { return DeviceCountNoThrow(); }
  bool hasPrimaryContext(c10::DeviceIndex /*device_index*/) const override {
    return Runtime::GetIfOpen() != nullptr;
  }
  // The session opens at the device's first real use (an allocation, a
  // stream, an operator), not here: PyTorch initializes the device to ask
  // for its current stream, which torch.compile does while tracing even a
  // CPU-only program, and that must not start neuron-rtd.
  void init() const override {}
  void setCurrentDevice(c10::DeviceIndex device) const override { SetCurrentDevice(device); }
  c10::DeviceIndex getCurrentDevice() const override { return CurrentDevice(); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const c10::DeviceIndex previous = CurrentDevice();
    SetCurrentDevice(device);
    return previous;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchangeDevice(device);
  }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
    return DefaultGenerator(device_index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override {
    return at::make_generator<NeuronGenerator>(device_index < 0 ? CurrentDevice() : device_index);
  }

  bool isPinnedPtr(const void* data) const override {
    return Runtime::GetIfOpen() != nullptr && FindPinned(data, nullptr) != nullptr;
  }
  c10::Allocator* getPinnedMemoryAllocator() const override { return &PinnedAllocator(); }

  c10::Device getDeviceFromPtr(void* data) const override {
    std::optional<c10::DeviceIndex> device = DeviceOfAddress(data);
    TORCH_CHECK_VALUE(device.has_value(), "address ", data,
                      " is not neuron memory allocated by this process");
    return c10::Device(c10::DeviceType::PrivateUse1, *device);
  }

  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override {
    ResizeNeuronStorage(*storage.unsafeGetStorageImpl(), new_bytes);
  }
};

struct RegisterHooks {
  RegisterHooks() { at::RegisterPrivateUse1HooksInterface(new NeuronHooks()); }
};
RegisterHooks register_hooks;

}  // namespace
}  // namespace torch_neuronx

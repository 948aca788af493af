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
  bool isAvailable() const override { return DeviceCountNoThrow() > 0; }
  c10::DeviceIndex deviceCount() const override { return DeviceCountNoThrow(); }
  bool hasPrimaryContext(c10::DeviceIndex /*device_index*/) const override {
    return Runtime::GetIfOpen() != nullptr;
  }
  void init() const override { (void)GetRuntime(); }
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

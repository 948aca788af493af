// The device guard of `neuron`: what torch.accelerator, torch.Stream,
// torch.Event, autograd's device threads and every device-generic part of
// PyTorch call. Events are points on a stream's timeline (libneuronrt).
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include "csrc/runtime/NeuronAllocator.h"
#include "csrc/runtime/NeuronFunctions.h"

namespace torch_neuronx {
namespace {

// What a c10 event handle points to. Recording again replaces the point.
struct NeuronEvent {
  neuronrt::Event point;
  // Recorded as a stamped SIGNAL (an event created with enable_timing).
  bool timed = false;
};

class NeuronGuardImpl final : public c10::impl::DeviceGuardImplInterface {
 public:
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override { return kType; }

  c10::Device exchangeDevice(c10::Device device) const override {
    const c10::Device previous = getDevice();
    if (device.index() != previous.index()) SetCurrentDevice(device.index());
    return previous;
  }

  c10::Device getDevice() const override { return c10::Device(kType, CurrentDevice()); }

  void setDevice(c10::Device device) const override { SetCurrentDevice(device.index()); }

  void uncheckedSetDevice(c10::Device device) const noexcept override {
    try {
      SetCurrentDevice(device.index());
    } catch (...) {
    }
  }

  c10::Stream getStream(c10::Device device) const override {
    return CurrentStream(device.index());
  }

  c10::Stream getDefaultStream(c10::Device device) const override {
    return DefaultStream(device.index());
  }

  c10::Stream getNewStream(c10::Device device, int priority) const override {
    const c10::DeviceIndex index = device.index() < 0 ? CurrentDevice() : device.index();
    absl::StatusOr<int64_t> id = GetRuntime().PoolStream(index, priority);
    ThrowIfError(id.status(), "creating a neuron stream");
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kType, index), *id);
  }

  c10::Stream getStreamFromGlobalPool(c10::Device device, bool high_priority) const override {
    int priority = 0;
    if (high_priority) {
      absl::StatusOr<int> highest = GetRuntime().HighestStreamPriority();
      ThrowIfError(highest.status(), "asking neuron-rtd for stream priorities");
      priority = *highest;
    }
    return getNewStream(device, priority);
  }

  c10::Stream exchangeStream(c10::Stream stream) const override {
    const c10::Stream previous = CurrentStream(stream.device_index());
    SetCurrentStream(stream);
    return previous;
  }

  c10::DeviceIndex deviceCount() const noexcept override { return DeviceCountNoThrow(); }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
                "event of neuron:", static_cast<int>(device_index),
                " recorded on a stream of neuron:", static_cast<int>(stream.device_index()));
    // torch.Event(enable_timing=True) asks for the backend's default, as
    // CUDA's: a timestamp. Without it an event costs no command at all.
    const bool timed = flag == c10::EventFlag::BACKEND_DEFAULT;
    absl::StatusOr<neuronrt::Event> point =
        timed ? RuntimeStream(stream).RecordTimed() : RuntimeStream(stream).Record();
    ThrowIfError(point.status(), "recording a neuron event");
    if (*event == nullptr) *event = new NeuronEvent();
    static_cast<NeuronEvent*>(*event)->point = *point;
    static_cast<NeuronEvent*>(*event)->timed = timed;
  }

  void block(void* event, const c10::Stream& stream) const override {
    if (event == nullptr) return;
    const neuronrt::Event& point = static_cast<NeuronEvent*>(event)->point;
    if (!point.valid()) return;
    ThrowIfError(RuntimeStream(stream).Wait(point), "making a neuron stream wait for an event");
  }

  bool queryEvent(void* event) const override {
    if (event == nullptr) return true;
    const neuronrt::Event& point = static_cast<NeuronEvent*>(event)->point;
    if (!point.valid()) return true;
    absl::StatusOr<bool> done = point.Query();
    ThrowIfError(done.status(), "neuron event");
    return *done;
  }

  void synchronizeEvent(void* event) const override {
    if (event == nullptr) return;
    const neuronrt::Event& point = static_cast<NeuronEvent*>(event)->point;
    if (!point.valid()) return;
    ThrowIfError(point.Synchronize(), "neuron event");
  }

  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    delete static_cast<NeuronEvent*>(event);
  }

  // Milliseconds between the device reaching `start` and `end`, as CUDA's;
  // waits for both.
  double elapsedTime(void* start, void* end,
                     const c10::DeviceIndex /*device_index*/) const override {
    TORCH_CHECK_VALUE(start != nullptr && end != nullptr &&
                    static_cast<NeuronEvent*>(start)->point.valid() &&
                    static_cast<NeuronEvent*>(end)->point.valid(),
                "Both events must be recorded before calculating elapsed time.");
    TORCH_CHECK_VALUE(
        static_cast<NeuronEvent*>(start)->timed && static_cast<NeuronEvent*>(end)->timed,
        "Both events must be created with argument 'enable_timing=True'.");
    neuronrt::Session& session = GetRuntime().session();
    absl::StatusOr<int64_t> started =
        session.EventTimestamp(static_cast<NeuronEvent*>(start)->point);
    ThrowIfError(started.status(), "neuron event");
    absl::StatusOr<int64_t> ended = session.EventTimestamp(static_cast<NeuronEvent*>(end)->point);
    ThrowIfError(ended.status(), "neuron event");
    return static_cast<double>(*ended - *started) / 1e6;
  }

  bool queryStream(const c10::Stream& stream) const override {
    absl::StatusOr<neuronrt::Event> point = RuntimeStream(stream).Record();
    ThrowIfError(point.status(), "neuron stream");
    absl::StatusOr<bool> done = point->Query();
    ThrowIfError(done.status(), "neuron stream");
    return *done;
  }

  void synchronizeStream(const c10::Stream& stream) const override {
    ThrowIfError(RuntimeStream(stream).Synchronize(), "neuron stream");
  }

  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    ThrowIfError(GetRuntime().SynchronizeDevice(device_index < 0 ? CurrentDevice() : device_index),
                 "neuron device");
  }

  void recordDataPtrOnStream(const c10::DataPtr& data_ptr,
                             const c10::Stream& stream) const override {
    NeuronAllocator().recordStream(data_ptr, stream);
  }
};

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, NeuronGuardImpl);

}  // namespace torch_neuronx

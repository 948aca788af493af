// The autograd profiler's device path without Kineto
// (torch.autograd.profiler.profile(use_device="neuron"), use_kineto=False):
// each operator's start and end are timed events on the current stream, and
// its device time is the time between them, as CUDA's legacy path does with
// cudaEvents.
#include <torch/csrc/profiler/stubs/base.h>

#include <c10/util/ApproximateClock.h>

#include "csrc/runtime/NeuronFunctions.h"
#include "csrc/runtime/Runtime.h"

namespace torch_neuronx::profiler {
namespace {

class NeuronProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
 public:
  void record(c10::DeviceIndex* device, torch::profiler::impl::ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    const c10::DeviceIndex current = CurrentDevice();
    if (device != nullptr) *device = current;
    absl::StatusOr<neuronrt::Event> timed = RuntimeStream(CurrentStream(current)).RecordTimed();
    ThrowIfError(timed.status(), "recording a profiler event");
    *event = std::make_shared<neuronrt::Event>(*std::move(timed));
    if (cpu_ns != nullptr) *cpu_ns = c10::getTime();
  }

  // Microseconds, as the CUDA stub's.
  float elapsed(const torch::profiler::impl::ProfilerVoidEventStub* start,
                const torch::profiler::impl::ProfilerVoidEventStub* end) const override {
    neuronrt::Session& session = GetRuntime().session();
    absl::StatusOr<int64_t> started =
        session.EventTimestamp(*static_cast<const neuronrt::Event*>(start->get()));
    ThrowIfError(started.status(), "a profiler event");
    absl::StatusOr<int64_t> ended =
        session.EventTimestamp(*static_cast<const neuronrt::Event*>(end->get()));
    ThrowIfError(ended.status(), "a profiler event");
    return static_cast<float>(*ended - *started) / 1000.0f;
  }

  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    const c10::DeviceIndex previous = CurrentDevice();
    for (int device = 0; device < GetRuntime().device_count(); ++device) {
      SetCurrentDevice(static_cast<c10::DeviceIndex>(device));
      op(device);
    }
    SetCurrentDevice(previous);
  }

  void synchronize() const override { GetRuntime().SettleAllStreams(); }
};

struct RegisterStubs {
  RegisterStubs() {
    static NeuronProfilerStubs stubs;
    torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  }
} register_stubs;

}  // namespace
}  // namespace torch_neuronx::profiler

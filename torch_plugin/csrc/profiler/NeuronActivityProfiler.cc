// torch.profiler's device activity for neuron: a Kineto IActivityProfiler
// registered for PrivateUse1. While a capture runs, every command the
// process submits on a captured core carries the PROFILE flag and the
// correlation id of the operator that issued it (Kineto pushes one per op
// and thread); at stop the daemon's stamps are drained and each command
// becomes a device activity linked to its operator, with a runtime event on
// the submitting thread for the trace's CPU-to-device arrow.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <libkineto.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "csrc/profiler/Capture.h"
#include "csrc/runtime/Runtime.h"
#include "neuron/rtd/abi/command_ring.h"
#include "neuronrt/profiling.h"

namespace torch_neuronx::profiler {
namespace {

using libkineto::ActivityType;

// Flow ids of our CPU-to-device arrows: above the small ids Kineto gives
// its own flows.
constexpr uint32_t kFirstFlowId = 1u << 30;
// How often a capture empties the daemon's buffer (131072 records) while it
// records: far faster than any process submits commands.
constexpr absl::Duration kDrainInterval = absl::Milliseconds(200);

int64_t RealtimeNs() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

// Kineto's correlation ids of the operators running on this thread,
// innermost last.
thread_local std::vector<uint64_t> correlation_stack;

ActivityType DeviceActivityType(uint16_t opcode) {
  switch (opcode) {
    case NEURON_RTD_OP_COPY: return ActivityType::GPU_MEMCPY;
    case NEURON_RTD_OP_FILL: return ActivityType::GPU_MEMSET;
    default: return ActivityType::CONCURRENT_KERNEL;
  }
}

const char* RuntimeCallName(uint16_t opcode) {
  switch (opcode) {
    case NEURON_RTD_OP_COPY: return "neuronrtCopy";
    case NEURON_RTD_OP_FILL: return "neuronrtFill";
    case NEURON_RTD_OP_COLLECTIVE: return "neuronrtCollective";
    default: return "neuronrtLaunch";
  }
}

class NeuronProfilerSession final : public libkineto::IActivityProfilerSession {
 public:
  explicit NeuronProfilerSession(const libkineto::Config& config) {
    capture_ = std::make_shared<Capture>();
    capture_->options = ParseCaptureOptions(config.getCustomConfig(), capture_->errors);
  }

  ~NeuronProfilerSession() override { StopDrainer(); }

  void start() override {
    status_ = libkineto::TraceStatus::RECORDING;
    capture_->realtime_offset_ns = RealtimeNs() - neuronrt::MonotonicNowNs();
    if (!capture_->options.device) return;
    // A program that never touched the device before profiling still gets
    // its device time: the session opens now.
    absl::StatusOr<Runtime*> runtime =
        Runtime::Reachable() ? Runtime::Get()
                             : absl::UnavailableError("no neuron-rtd answers and none can start");
    if (!runtime.ok()) {
      capture_->errors.push_back("neuron profiler: no device: " +
                                 std::string(runtime.status().message()));
      return;
    }
    capture_->cores = (*runtime)->session().cores();
    neuronrt::ProfilingOptions options{.runtime_spans = capture_->options.runtime_spans};
    for (int device : capture_->options.devices) {
      if (device >= (*runtime)->device_count()) {
        capture_->errors.push_back("neuron profiler: neuron:" + std::to_string(device) +
                                   " does not exist; it is not captured");
        continue;
      }
      options.cores.push_back((*runtime)->core(device));
    }
    if (!capture_->options.devices.empty() && options.cores.empty()) return;
    if (absl::Status started = (*runtime)->session().StartProfiling(options); !started.ok()) {
      capture_->errors.push_back("neuron profiler: " + std::string(started.message()));
      return;
    }
    runtime_ = *runtime;
    drainer_ = std::thread([this] {
      // A failed drain (the daemon gone) is reported once; Collect tries
      // again at the end.
      while (!stop_draining_.WaitForNotificationWithTimeout(kDrainInterval)) {
        if (!Drain()) return;
      }
    });
  }

  void stop() override {
    status_ = libkineto::TraceStatus::PROCESSING;
    Collect();
    PublishCapture(capture_);
  }

  std::vector<std::string> errors() override { return capture_->errors; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0,
                 0);
  }

  void processTrace(libkineto::ActivityLogger& logger,
                    libkineto::getLinkedActivityCallback linked_activity, int64_t,
                    int64_t) override {
    const int32_t pid = static_cast<int32_t>(::getpid());
    uint32_t flow = kFirstFlowId;
    for (const neuronrt::ProfiledCommand& command : capture_->records.commands) {
      // Waits, signals and markers move nothing: they are not device time.
      if (command.engine == neuronrt::Engine::kSync) continue;
      const libkineto::ITraceActivity* op =
          command.correlation_id != 0
              ? linked_activity(static_cast<int32_t>(command.correlation_id))
              : nullptr;
      libkineto::GenericTraceActivity device;
      device.activityType = DeviceActivityType(command.opcode);
      device.activityName = command.op_name.empty() ? RuntimeCallName(command.opcode)
                                                    : command.op_name;
      device.startTime = command.start_ns + capture_->realtime_offset_ns;
      device.endTime = command.end_ns + capture_->realtime_offset_ns;
      device.id = static_cast<int32_t>(flow);
      device.device = DeviceIndex(command.core);
      device.resource = static_cast<int32_t>(command.stream_id);
      device.linked = op;
      device.addMetadataQuoted("engine", neuronrt::EngineName(command.engine));
      device.addMetadata("core", command.core);
      device.addMetadata("stream", command.stream_id);
      device.addMetadata("sequence", command.sequence);
      if (command.bytes > 0) device.addMetadata("bytes", command.bytes);
      if (command.failed) device.addMetadata("failed", 1);
      if (command.submit_ns != 0) {
        device.addMetadata("queue wait us", (command.start_ns - command.submit_ns) / 1000.0);
        device.flow.id = flow;
        device.flow.type = libkineto::kLinkAsyncCpuGpu;
        device.flow.start = 0;
        libkineto::GenericTraceActivity launch;
        launch.activityType = ActivityType::PRIVATEUSE1_RUNTIME;
        launch.activityName = RuntimeCallName(command.opcode);
        launch.startTime = command.submit_ns + capture_->realtime_offset_ns;
        launch.endTime = launch.startTime + 1000;
        launch.id = static_cast<int32_t>(flow);
        launch.device = pid;
        launch.resource = command.submit_thread;
        launch.threadId = command.submit_thread;
        launch.linked = op;
        launch.flow.id = flow;
        launch.flow.type = libkineto::kLinkAsyncCpuGpu;
        launch.flow.start = 1;
        launch.log(logger);
      }
      device.log(logger);
      ++flow;
    }
    for (const neuronrt::RuntimeSpan& span : capture_->records.spans) {
      // The daemon's spans on a row of their own; the client's on its thread.
      libkineto::GenericTraceActivity runtime;
      runtime.activityType = ActivityType::PRIVATEUSE1_RUNTIME;
      runtime.activityName = (span.thread == 0 ? "neuron-rtd " : "neuronrt ") + span.name;
      runtime.startTime = span.start_ns + capture_->realtime_offset_ns;
      runtime.endTime = span.end_ns + capture_->realtime_offset_ns;
      runtime.device = pid;
      runtime.resource = span.thread;
      runtime.threadId = span.thread;
      runtime.addMetadataQuoted("detail", span.detail);
      runtime.log(logger);
    }
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    return std::make_unique<libkineto::DeviceInfo>(
        libkineto::DeviceInfo{0, 0x1000000, "neuron:0", "NeuronCore"});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::set<std::pair<int32_t, uint64_t>> seen;
    std::vector<libkineto::ResourceInfo> resources;
    for (const neuronrt::ProfiledCommand& command : capture_->records.commands) {
      const int32_t device = DeviceIndex(command.core);
      if (!seen.emplace(device, command.stream_id).second) continue;
      resources.push_back(libkineto::ResourceInfo{
          static_cast<int64_t>(command.stream_id), static_cast<int64_t>(command.stream_id),
          device, "stream " + std::to_string(command.stream_id)});
    }
    return resources;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return nullptr; }

  void pushCorrelationId(uint64_t id) override {
    correlation_stack.push_back(id);
    neuronrt::SetThreadCorrelationId(id);
  }

  void popCorrelationId() override {
    if (!correlation_stack.empty()) correlation_stack.pop_back();
    neuronrt::SetThreadCorrelationId(correlation_stack.empty() ? 0 : correlation_stack.back());
  }

 private:
  // Flushes the window's commands and takes their records from the daemon.
  void Collect() {
    if (runtime_ == nullptr) return;
    StopDrainer();
    // What the window submitted runs to the end first (as a CUDA profiler
    // flushes), without taking the program's errors.
    runtime_->SettleAllStreams();
    if (absl::Status stopped = runtime_->session().StopProfiling(); !stopped.ok()) {
      capture_->errors.push_back("neuron profiler: " + std::string(stopped.message()));
    }
    Drain();
    if (capture_->records.dropped > 0) {
      capture_->errors.push_back("neuron profiler: " +
                                 std::to_string(capture_->records.dropped) +
                                 " device records were lost (the daemon's buffer was full)");
    }
    runtime_ = nullptr;
  }

  // Appends what the daemon holds to the capture; false (the error noted)
  // when it cannot. The drainer thread while recording, then Collect once
  // it has joined: never both at once.
  bool Drain() {
    absl::StatusOr<neuronrt::ProfileRecords> records = runtime_->session().DrainProfile();
    if (!records.ok()) {
      capture_->errors.push_back("neuron profiler: " + std::string(records.status().message()));
      return false;
    }
    neuronrt::ProfileRecords& kept = capture_->records;
    kept.commands.insert(kept.commands.end(), std::make_move_iterator(records->commands.begin()),
                         std::make_move_iterator(records->commands.end()));
    kept.spans.insert(kept.spans.end(), std::make_move_iterator(records->spans.begin()),
                      std::make_move_iterator(records->spans.end()));
    kept.dropped += records->dropped;
    return true;
  }

  void StopDrainer() {
    if (!drainer_.joinable()) return;
    stop_draining_.Notify();
    drainer_.join();
  }

  int32_t DeviceIndex(uint32_t core) const {
    const auto& cores = capture_->cores;
    return static_cast<int32_t>(std::find(cores.begin(), cores.end(), core) - cores.begin());
  }

  std::shared_ptr<Capture> capture_;
  Runtime* runtime_ = nullptr;
  absl::Notification stop_draining_;
  std::thread drainer_;
};

class NeuronActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<ActivityType>& availableActivities() const override { return activities_; }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<ActivityType>& activity_types, const libkineto::Config& config) override {
    // PRIVATEUSE1_RUNTIME alone comes with every CPU-only profile: only the
    // device activities (ProfilerActivity.PrivateUse1) start a capture.
    const bool wanted = std::any_of(activity_types.begin(), activity_types.end(),
                                    [&](ActivityType type) {
                                      return type == ActivityType::CONCURRENT_KERNEL ||
                                             type == ActivityType::GPU_MEMCPY ||
                                             type == ActivityType::GPU_MEMSET;
                                    });
    if (!wanted) return nullptr;
    return std::make_unique<NeuronProfilerSession>(config);
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t, int64_t, const std::set<ActivityType>& activity_types,
      const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  const std::string name_ = "neuron";
  const std::set<ActivityType> activities_ = {
      ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY, ActivityType::GPU_MEMSET,
      ActivityType::PRIVATEUSE1_RUNTIME};
};

REGISTER_PRIVATEUSE1_PROFILER(NeuronActivityProfiler);

}  // namespace
}  // namespace torch_neuronx::profiler

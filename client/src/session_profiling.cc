// Session's profiling: starting and stopping it in the daemon, draining the
// daemon's records into the session's collector, event timestamps.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "neuronrt/session.h"
#include "src/internal/session_core.h"

namespace neuronrt {

namespace v1 = neuron::rtd::v1;

absl::Status Session::StartProfiling(const ProfilingOptions& options) {
  for (uint32_t core : options.cores) {
    if (std::find(core_->cores().begin(), core_->cores().end(), core) == core_->cores().end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("core %d is not one of this session's cores", core));
    }
  }
  v1::SetProfilingRequest request;
  request.set_session_id(core_->id());
  request.set_runtime_spans(options.runtime_spans);
  absl::Status set =
      core_->client().Call(&v1::Runtime::Stub::SetProfiling, request, "SetProfiling").status();
  if (!set.ok()) return set;
  core_->profile().Start(options);
  return absl::OkStatus();
}

absl::Status Session::StopProfiling() {
  core_->profile().Stop();
  v1::SetProfilingRequest request;
  request.set_session_id(core_->id());
  return core_->client().Call(&v1::Runtime::Stub::SetProfiling, request, "SetProfiling").status();
}

namespace {

static_assert(static_cast<int>(Engine::kTensor) == v1::ENGINE_TENSOR &&
                  static_cast<int>(Engine::kVector) == v1::ENGINE_VECTOR &&
                  static_cast<int>(Engine::kScalar) == v1::ENGINE_SCALAR &&
                  static_cast<int>(Engine::kGpSimd) == v1::ENGINE_GPSIMD &&
                  static_cast<int>(Engine::kDma) == v1::ENGINE_DMA &&
                  static_cast<int>(Engine::kCollective) == v1::ENGINE_COLLECTIVE &&
                  static_cast<int>(Engine::kSync) == v1::ENGINE_SYNC &&
                  static_cast<int>(Engine::kHost) == v1::ENGINE_HOST,
              "neuronrt::Engine must carry neuron.rtd.v1.Engine's values");

// Moves everything the daemon holds for the session into its collector.
absl::Status DrainDaemon(internal::SessionCore& core) {
  v1::DrainProfileRequest request;
  request.set_session_id(core.id());
  while (true) {
    absl::StatusOr<v1::DrainProfileResponse> response =
        core.client().Call(&v1::Runtime::Stub::DrainProfile, request, "DrainProfile");
    if (!response.ok()) return core.SessionError(response.status());
    std::vector<ProfiledCommand> commands;
    commands.reserve(response->commands_size());
    for (const v1::ProfiledCommand& in : response->commands()) {
      commands.push_back(ProfiledCommand{.correlation_id = in.correlation_id(),
                                         .stream_id = in.stream_id(),
                                         .sequence = in.sequence(),
                                         .core = in.core(),
                                         .opcode = static_cast<uint16_t>(in.opcode()),
                                         .engine = static_cast<Engine>(in.engine()),
                                         .failed = in.failed(),
                                         .op_name = in.op_name(),
                                         .start_ns = in.start_ns(),
                                         .end_ns = in.end_ns(),
                                         .bytes = in.bytes()});
    }
    std::vector<RuntimeSpan> spans;
    for (const v1::RuntimeSpan& in : response->spans()) {
      spans.push_back(RuntimeSpan{.name = in.name(),
                                  .detail = in.detail(),
                                  .start_ns = in.start_ns(),
                                  .end_ns = in.end_ns()});
    }
    core.profile().Absorb(std::move(commands), std::move(spans), response->dropped());
    if (!response->more()) return absl::OkStatus();
  }
}

}  // namespace

absl::StatusOr<ProfileRecords> Session::DrainProfile() {
  if (absl::Status drained = DrainDaemon(*core_); !drained.ok()) return drained;
  return core_->profile().Take();
}

absl::StatusOr<int64_t> Session::EventTimestamp(const Event& event) {
  if (!event.valid()) return absl::FailedPreconditionError("the event was never recorded");
  if (absl::Status done = event.Synchronize(); !done.ok()) return done;
  if (auto end = core_->profile().TimingEnd(event.stream_id(), event.value())) return *end;
  if (absl::Status drained = DrainDaemon(*core_); !drained.ok()) return drained;
  if (auto end = core_->profile().TimingEnd(event.stream_id(), event.value())) return *end;
  return absl::FailedPreconditionError(absl::StrFormat(
      "event at %d of stream %d carries no timestamp: record it with timing enabled",
      event.value(), event.stream_id()));
}

}  // namespace neuronrt

// Profiling through neuron-rtd: commands submitted while a session profiles
// carry the PROFILE flag and the submitting thread's correlation id; the
// daemon stamps them when they run, and Session::DrainProfile collects them
// with the client's own submit times.
#ifndef NEURONRT_PROFILING_H_
#define NEURONRT_PROFILING_H_

#include <cstdint>
#include <string>
#include <vector>

namespace neuronrt {

// The framework's id for the operation the calling thread is running (as
// Kineto's correlation ids); commands the thread submits while a session
// profiles carry it. 0: none. Thread-local.
void SetThreadCorrelationId(uint64_t id);
uint64_t ThreadCorrelationId();

// CLOCK_MONOTONIC, nanoseconds: the clock of every profile timestamp, the
// daemon's and the client's alike.
int64_t MonotonicNowNs();

// The values of neuron.rtd.v1.Engine.
enum class Engine : uint8_t {
  kUnspecified = 0,
  kTensor = 1,
  kVector = 2,
  kScalar = 3,
  kGpSimd = 4,
  kDma = 5,
  kCollective = 6,
  kSync = 7,
  // The host CPU: a launch the core could not run (on real Trainium, one
  // with no NEFF, run on neuron-rtd's host execution path).
  kHost = 8,
};
const char* EngineName(Engine engine);

struct ProfiledCommand {
  uint64_t correlation_id = 0;
  uint64_t stream_id = 0;
  uint64_t sequence = 0;
  uint32_t core = 0;
  uint16_t opcode = 0;  // NEURON_RTD_OP_*
  Engine engine = Engine::kUnspecified;
  bool failed = false;
  std::string op_name;
  // When this client submitted the command, from which thread (gettid),
  // and when the device started and finished it.
  int64_t submit_ns = 0;
  int32_t submit_thread = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint64_t bytes = 0;
};

// Runtime work for the session (ProfilingOptions::runtime_spans): the
// daemon's ("load_executable") or this client's ("stage_in", "stage_out":
// pageable memory copied through the staging arena).
struct RuntimeSpan {
  std::string name;
  std::string detail;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  // The client thread (gettid) that did the work; 0 for the daemon.
  int32_t thread = 0;
};

struct ProfileRecords {
  std::vector<ProfiledCommand> commands;
  std::vector<RuntimeSpan> spans;
  // Records the daemon could not keep (its buffer was full) or this client
  // could not match, since the last drain.
  uint64_t dropped = 0;
};

struct ProfilingOptions {
  // Host-wide core indices whose commands are profiled; empty: every core
  // of the session.
  std::vector<uint32_t> cores;
  bool runtime_spans = false;
};

}  // namespace neuronrt

#endif  // NEURONRT_PROFILING_H_

// The compiler worker process (neuron_compile_worker.py, the simulated
// neuronx-cc), supervised: started when first needed, in its own process
// group with resource limits and a lower CPU priority than the cores'
// workers, killed (with the compilers it started) when a graph takes longer
// than the timeout, and started again for the next graph after it died.
#ifndef NEURON_RTD_DAEMON_COMPILER_COMPILER_WORKER_H_
#define NEURON_RTD_DAEMON_COMPILER_COMPILER_WORKER_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace neuron::rtd::compiler {

struct WorkerOptions {
  // The Python interpreter that has the daemon's version of torch.
  std::string python = "python3";
  // neuron_compile_worker.py.
  std::string script;
  // The worker's own directory: TorchInductor's cache and its log
  // (worker.log). Created 0700.
  std::string scratch_dir;
  // Longest a graph may take to compile; the worker is killed past it.
  absl::Duration timeout = absl::Minutes(10);
  // Longest the worker may take to start (it imports torch).
  absl::Duration start_timeout = absl::Minutes(2);
  // Address space of the worker and the compilers it starts; 0: unlimited.
  uint64_t max_memory_bytes = 0;
  // Added to the worker's nice value: compiles take the CPU the cores'
  // workers leave.
  int nice = 10;
};

// What the worker says of itself when it starts.
struct WorkerInfo {
  std::string torch_version;
  std::string cpu_capability;
};

// Thread-safety: one thread (the compile service's) drives it; Interrupt
// may be called from any thread.
class CompilerWorker {
 public:
  explicit CompilerWorker(WorkerOptions options);
  CompilerWorker(const CompilerWorker&) = delete;
  CompilerWorker& operator=(const CompilerWorker&) = delete;
  ~CompilerWorker();

  // Starts the worker unless it runs, and returns what it said at start.
  // UNAVAILABLE (with the end of its log) when it cannot start.
  absl::StatusOr<WorkerInfo> Start();

  // Compiles `graph_json` into a package at `output` (starting the worker
  // if needed). DEADLINE_EXCEEDED after the timeout (the worker is killed);
  // UNAVAILABLE when the worker died; INTERNAL with the worker's message
  // when it could not compile the graph.
  absl::Status Compile(std::string_view graph_json, const std::string& output);

  // Kills the worker (and everything in its process group) and reaps it.
  void Stop();

  // Kills the worker from any thread (the one driving it then sees it
  // die); it is reaped by the driving thread's next Stop or Start.
  void Interrupt();

  // The interpreter the next Start runs (the driving thread, while no
  // worker runs: after Stop, or before the first Start).
  void set_python(std::string python) { options_.python = std::move(python); }
  const std::string& python() const { return options_.python; }

  // Whether a worker has ever started and said it was ready.
  bool ever_ready() const { return ever_ready_; }

  pid_t pid() const { return pid_; }
  uint64_t starts() const { return starts_; }

 private:
  // The next line from the worker, within `deadline`.
  absl::StatusOr<std::string> ReadLine(absl::Time deadline);
  std::string LogTail() const;

  WorkerOptions options_;
  pid_t pid_ = -1;
  int to_worker_ = -1;
  int from_worker_ = -1;
  std::string pending_;  // read but not yet a whole line
  WorkerInfo info_;
  uint64_t next_request_ = 1;
  uint64_t starts_ = 0;
  bool ever_ready_ = false;
  std::atomic<pid_t> running_pid_{-1};
};

}  // namespace neuron::rtd::compiler

#endif  // NEURON_RTD_DAEMON_COMPILER_COMPILER_WORKER_H_

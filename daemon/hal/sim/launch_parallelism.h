// How many host threads the CPU kernels of one executable's launches use.
//
// The sim runs its kernels on the host's cores, which it shares with its
// clients. ATen, MKL and AOTInductor code parallelise through OpenMP, whose
// pool threads spin for milliseconds after each parallel region: a launch of
// a few tens of microseconds that wakes the pool costs the host far more CPU
// than it saves, and on a small host that CPU is the client's Python thread,
// which then issues the next operators late. So an executable whose launches
// are short runs them on the worker's thread alone; one whose launches are
// long enough to gain from the pool uses it. The decision is per executable
// (per tier, for graphs), from its own launches timed on the worker's CPU
// clock, so that a launch the OS preempted does not look long: the first
// launches run on one thread and are timed; after that one launch in
// kRecheckInterval is timed again, so that a decision the first launches got
// wrong is corrected. On Trainium the kernels run on the NeuronCore and the
// question does not arise.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_LAUNCH_PARALLELISM_H_
#define NEURON_RTD_DAEMON_HAL_SIM_LAUNCH_PARALLELISM_H_

#include <atomic>
#include <cstdint>

#include "absl/functional/function_ref.h"

namespace neuron::rtd::hal::sim {

// Thread-safety: every method may be called from several workers at once.
class LaunchParallelism {
 public:
  // Launches timed, on one thread, before the decision. The first decides
  // alone only when it is long (it may be slow from first-touch page faults
  // and lazy initialisation); otherwise the fastest of the others decides.
  static constexpr uint64_t kTimedLaunches = 3;
  // After the decision, one launch in this many is timed again.
  static constexpr uint64_t kRecheckInterval = 64;
  // A parallel executable whose last estimate is below this many times the
  // limit is timed again on one thread: a parallel launch's time on the
  // worker includes waiting at barriers for pool threads the OS preempted,
  // so it cannot show that a launch is short.
  static constexpr int64_t kSerialRecheckFactor = 8;

  enum class Mode : uint8_t { kUndecided, kSerial, kParallel };

  // Runs one launch: on the calling thread alone while the executable is
  // undecided or decided serial, else with the host's threads. An
  // executable is serial while its launches take less than
  // `parallel_min_ns` of CPU time on one thread; 0 keeps every launch
  // parallel.
  // `cpu_now_ns` reads the calling thread's CPU clock (tests pass their own).
  void Run(int64_t parallel_min_ns, absl::FunctionRef<void()> launch,
           absl::FunctionRef<int64_t()> cpu_now_ns = ThreadCpuNowNs);

  Mode mode() const { return mode_.load(std::memory_order_relaxed); }
  // For ExecutableStatus: 1 (serial), the host's threads (parallel), or 0
  // (undecided).
  int host_threads() const;

  // CLOCK_THREAD_CPUTIME_ID in nanoseconds.
  static int64_t ThreadCpuNowNs();

 private:
  void DecideFirst(uint64_t launch, int64_t elapsed_ns, int64_t parallel_min_ns);

  std::atomic<Mode> mode_{Mode::kUndecided};
  std::atomic<uint64_t> launches_{0};
  // The fastest of the first timed launches but the very first.
  std::atomic<int64_t> fastest_ns_{INT64_MAX};
  // The last timed launch's CPU time on one thread (measured, or the
  // worker's share times the threads).
  std::atomic<int64_t> estimate_ns_{INT64_MAX};
};

// While it lives, OpenMP regions and MKL calls made on the calling thread
// run on that thread alone; the thread's previous settings come back after.
// Thread-safety: belongs to the thread that made it.
class ScopedSerialKernels {
 public:
  ScopedSerialKernels();
  ScopedSerialKernels(const ScopedSerialKernels&) = delete;
  ScopedSerialKernels& operator=(const ScopedSerialKernels&) = delete;
  ~ScopedSerialKernels();

 private:
  int previous_openmp_threads_;
  int previous_mkl_threads_;
};

// The threads kernels started on the calling thread would use now.
struct KernelThreads {
  int openmp = 0;  // ATen's and AOTInductor's parallel regions, oneDNN
  int mkl = 0;     // MKL's BLAS and vector math
};
KernelThreads KernelThreadsNow();

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_LAUNCH_PARALLELISM_H_

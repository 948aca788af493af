#include "daemon/hal/sim/launch_parallelism.h"

#include <ATen/Parallel.h>
#include <time.h>

#include <algorithm>
#include <optional>

// The OpenMP runtime libtorch_cpu itself uses (the wheel's libgomp), and the
// per-thread MKL setting of the MKL linked into libtorch_cpu. Declared here
// rather than from omp.h/mkl.h: ATen's own set_num_threads would also
// resize the process-wide thread pools and clear oneDNN's caches.
extern "C" {
void omp_set_num_threads(int threads);
int MKL_Set_Num_Threads_Local(int threads);
int MKL_Get_Max_Threads(void);
}

namespace neuron::rtd::hal::sim {

int64_t LaunchParallelism::ThreadCpuNowNs() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

void LaunchParallelism::Run(int64_t parallel_min_ns, absl::FunctionRef<void()> launch,
                            absl::FunctionRef<int64_t()> cpu_now_ns) {
  if (parallel_min_ns <= 0) {
    launch();
    return;
  }
  const uint64_t number = launches_.fetch_add(1, std::memory_order_relaxed);
  const Mode mode = mode_.load(std::memory_order_relaxed);
  const bool timed = mode == Mode::kUndecided || number % kRecheckInterval == 0;
  const bool serial =
      mode != Mode::kParallel ||
      (timed && estimate_ns_.load(std::memory_order_relaxed) <
                    kSerialRecheckFactor * parallel_min_ns);
  std::optional<ScopedSerialKernels> one_thread;
  if (serial) one_thread.emplace();
  if (!timed) {
    launch();
    return;
  }
  const int64_t started = cpu_now_ns();
  launch();
  const int64_t elapsed = cpu_now_ns() - started;
  // A parallel launch's worker did its share; its wait at barriers only
  // adds, so the estimate is high, never low.
  const int64_t estimate = serial ? elapsed : elapsed * KernelThreadsNow().openmp;
  estimate_ns_.store(estimate, std::memory_order_relaxed);
  if (mode == Mode::kUndecided) {
    DecideFirst(number, elapsed, parallel_min_ns);
    return;
  }
  mode_.store(estimate < parallel_min_ns ? Mode::kSerial : Mode::kParallel,
              std::memory_order_relaxed);
}

void LaunchParallelism::DecideFirst(uint64_t launch, int64_t elapsed_ns,
                                    int64_t parallel_min_ns) {
  Mode undecided = Mode::kUndecided;
  if (launch == 0) {
    if (elapsed_ns >= parallel_min_ns) {
      mode_.compare_exchange_strong(undecided, Mode::kParallel, std::memory_order_relaxed);
    }
    return;
  }
  int64_t fastest = fastest_ns_.load(std::memory_order_relaxed);
  while (elapsed_ns < fastest &&
         !fastest_ns_.compare_exchange_weak(fastest, elapsed_ns, std::memory_order_relaxed)) {
  }
  if (launch + 1 < kTimedLaunches) return;
  fastest = std::min(fastest, elapsed_ns);
  mode_.compare_exchange_strong(undecided,
                                fastest < parallel_min_ns ? Mode::kSerial : Mode::kParallel,
                                std::memory_order_relaxed);
}

int LaunchParallelism::host_threads() const {
  switch (mode()) {
    case Mode::kSerial:
      return 1;
    case Mode::kParallel:
      return KernelThreadsNow().openmp;
    case Mode::kUndecided:
      break;
  }
  return 0;
}

ScopedSerialKernels::ScopedSerialKernels() {
  // ATen sets a thread's OpenMP count when the thread first asks for it:
  // ask now, so that it cannot undo what this scope sets.
  previous_openmp_threads_ = at::get_num_threads();
  omp_set_num_threads(1);
  previous_mkl_threads_ = MKL_Set_Num_Threads_Local(1);
}

ScopedSerialKernels::~ScopedSerialKernels() {
  // 0 returns MKL to its process-wide setting.
  MKL_Set_Num_Threads_Local(previous_mkl_threads_);
  omp_set_num_threads(previous_openmp_threads_);
}

KernelThreads KernelThreadsNow() {
  return KernelThreads{.openmp = at::get_num_threads(), .mkl = MKL_Get_Max_Threads()};
}

}  // namespace neuron::rtd::hal::sim

// Which launches of the sim run their kernels on one host thread.
#include "daemon/hal/sim/launch_parallelism.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace neuron::rtd::hal::sim {
namespace {

using Mode = LaunchParallelism::Mode;

constexpr int64_t kMicrosecond = 1000;
constexpr int64_t kThreshold = 200 * kMicrosecond;

// A clock that a launch advances by the time it "takes".
struct FakeClock {
  int64_t now = 0;
  int reads = 0;
  int64_t operator()() {
    ++reads;
    return now;
  }
};

// Runs one launch that takes `duration_ns` and reports the threads its
// kernels could use.
KernelThreads Launch(LaunchParallelism& parallelism, FakeClock& clock, int64_t duration_ns,
                     int64_t threshold_ns = kThreshold) {
  KernelThreads seen;
  parallelism.Run(
      threshold_ns,
      [&] {
        seen = KernelThreadsNow();
        clock.now += duration_ns;
      },
      [&] { return clock(); });
  return seen;
}

// What tells a serial launch from a parallel one needs two host threads.
#define SKIP_ON_ONE_THREAD()                                               \
  if (KernelThreadsNow().openmp < 2) GTEST_SKIP() << "one host thread"

TEST(LaunchParallelismTest, ShortLaunchesRunOnOneThread) {
  SKIP_ON_ONE_THREAD();
  const KernelThreads host = KernelThreadsNow();
  LaunchParallelism parallelism;
  FakeClock clock;
  for (uint32_t i = 0; i < LaunchParallelism::kTimedLaunches; ++i) {
    EXPECT_EQ(parallelism.mode(), Mode::kUndecided);
    const KernelThreads undecided = Launch(parallelism, clock, 10 * kMicrosecond);
    EXPECT_EQ(undecided.openmp, 1) << "an undecided launch is timed on one thread";
    EXPECT_EQ(undecided.mkl, 1);
  }
  EXPECT_EQ(parallelism.mode(), Mode::kSerial);
  const KernelThreads serial = Launch(parallelism, clock, 10 * kMicrosecond);
  EXPECT_EQ(serial.openmp, 1);
  EXPECT_EQ(serial.mkl, 1);
  const KernelThreads after = KernelThreadsNow();
  EXPECT_EQ(after.openmp, host.openmp) << "the thread's own setting comes back";
  EXPECT_EQ(after.mkl, host.mkl);
}

TEST(LaunchParallelismTest, ALongFirstLaunchDecidesParallelAtOnce) {
  const KernelThreads host = KernelThreadsNow();
  LaunchParallelism parallelism;
  FakeClock clock;
  Launch(parallelism, clock, 2 * kThreshold);
  EXPECT_EQ(parallelism.mode(), Mode::kParallel);
  const int reads = clock.reads;
  const KernelThreads seen = Launch(parallelism, clock, 2 * kThreshold);
  EXPECT_EQ(seen.openmp, host.openmp);
  EXPECT_EQ(seen.mkl, host.mkl);
  EXPECT_EQ(clock.reads, reads) << "a decided launch is not timed";
}

TEST(LaunchParallelismTest, AShortFirstLaunchLeavesTheDecisionToTheFastestOfTheNext) {
  LaunchParallelism serial;
  FakeClock clock;
  Launch(serial, clock, 10 * kMicrosecond);
  Launch(serial, clock, 2 * kThreshold);  // a page-faulting one, say
  Launch(serial, clock, 10 * kMicrosecond);
  EXPECT_EQ(serial.mode(), Mode::kSerial);

  LaunchParallelism parallel;
  Launch(parallel, clock, 10 * kMicrosecond);  // the next ones are longer: it was no sample
  Launch(parallel, clock, 2 * kThreshold);
  EXPECT_EQ(parallel.mode(), Mode::kUndecided);
  Launch(parallel, clock, kThreshold);
  EXPECT_EQ(parallel.mode(), Mode::kParallel);
}

TEST(LaunchParallelismTest, AWrongDecisionIsCorrectedAtTheNextCheck) {
  SKIP_ON_ONE_THREAD();
  LaunchParallelism parallelism;
  FakeClock clock;
  Launch(parallelism, clock, 2 * kThreshold);  // cold, or the host was busy
  ASSERT_EQ(parallelism.mode(), Mode::kParallel);
  uint64_t launches = 1;
  while (launches <= LaunchParallelism::kRecheckInterval) {
    Launch(parallelism, clock, 10 * kMicrosecond);
    ++launches;
  }
  EXPECT_EQ(parallelism.mode(), Mode::kSerial);
  // Launches that grow past the threshold on one thread go back to every
  // thread at the next check.
  while (launches <= 2 * LaunchParallelism::kRecheckInterval) {
    Launch(parallelism, clock, kThreshold);
    ++launches;
  }
  EXPECT_EQ(parallelism.mode(), Mode::kParallel);
}

TEST(LaunchParallelismTest, ALargeExecutableIsCheckedWithEveryThread) {
  SKIP_ON_ONE_THREAD();
  const int threads = KernelThreadsNow().openmp;
  LaunchParallelism parallelism;
  FakeClock clock;
  Launch(parallelism, clock, 10 * kThreshold);
  ASSERT_EQ(parallelism.mode(), Mode::kParallel);
  for (uint64_t i = 1; i < LaunchParallelism::kRecheckInterval; ++i) {
    Launch(parallelism, clock, 10 * kThreshold / threads);
  }
  // The check: with every thread, its time times the threads estimates
  // the work of one.
  EXPECT_EQ(Launch(parallelism, clock, kThreshold / threads).openmp, threads);
  EXPECT_EQ(parallelism.mode(), Mode::kParallel);
}

TEST(LaunchParallelismTest, AParallelExecutableThatLooksSmallIsCheckedOnOneThread) {
  SKIP_ON_ONE_THREAD();
  LaunchParallelism parallelism;
  FakeClock clock;
  Launch(parallelism, clock, 2 * kThreshold);
  ASSERT_EQ(parallelism.mode(), Mode::kParallel);
  for (uint64_t i = 1; i < LaunchParallelism::kRecheckInterval; ++i) {
    Launch(parallelism, clock, kThreshold);
  }
  // Its estimate (two thresholds) is below kSerialRecheckFactor of them:
  // the check runs on one thread, where a wait for preempted pool threads
  // cannot make it look long.
  EXPECT_EQ(Launch(parallelism, clock, kThreshold / 2).openmp, 1);
  EXPECT_EQ(parallelism.mode(), Mode::kSerial);
}

TEST(LaunchParallelismTest, ZeroThresholdNeverTimesNorSerialises) {
  const KernelThreads host = KernelThreadsNow();
  LaunchParallelism parallelism;
  FakeClock clock;
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Launch(parallelism, clock, kMicrosecond, /*threshold_ns=*/0).openmp, host.openmp);
  }
  EXPECT_EQ(clock.reads, 0);
  EXPECT_EQ(parallelism.mode(), Mode::kUndecided);
}

TEST(LaunchParallelismTest, AParallelForInASerialScopeRunsOnTheCallingThread) {
  SKIP_ON_ONE_THREAD();
  std::atomic<int> regions_threads{0};
  {
    ScopedSerialKernels serial;
    at::parallel_for(0, 1 << 20, /*grain_size=*/1, [&](int64_t, int64_t) {
      regions_threads.fetch_add(1);
      EXPECT_EQ(at::get_thread_num(), 0);
    });
  }
  EXPECT_EQ(regions_threads.load(), 1) << "one chunk, on this thread";
}

TEST(LaunchParallelismTest, ConcurrentLaunchesDecideOnce) {
  SKIP_ON_ONE_THREAD();
  LaunchParallelism parallelism;
  std::atomic<int> serial_launches{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&] {
      FakeClock clock;
      for (int i = 0; i < 200; ++i) {
        if (Launch(parallelism, clock, kMicrosecond).openmp == 1) serial_launches.fetch_add(1);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  EXPECT_EQ(parallelism.mode(), Mode::kSerial);
  EXPECT_GE(serial_launches.load(), 800 - 4 * static_cast<int>(LaunchParallelism::kTimedLaunches));
}

}  // namespace
}  // namespace neuron::rtd::hal::sim

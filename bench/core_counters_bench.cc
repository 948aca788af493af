// What a core queue's counters cost each command: the worker's counting of
// one command (its kind and outcome, its engine time, its execution-time
// bucket), timed over many commands with varying kinds and durations, in
// nanoseconds. bench/exporter.py sets it against the daemon's time per small
// command, measured in the same run.
#include <chrono>
#include <cstdint>
#include <cstdio>

#include "daemon/queue/core_counters.h"

int main() {
  using neuron::rtd::queue::CommandOutcome;
  using neuron::rtd::queue::CoreCounters;
  using neuron::rtd::queue::CoreEngine;
  constexpr uint64_t kCommands = 50'000'000;
  CoreCounters counters;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < kCommands; ++i) {
    const uint64_t took = 200 + (i & 1023);
    counters.CountCommand(static_cast<uint16_t>(2 + (i & 3)), CommandOutcome::kCompleted);
    counters.AddBusy(CoreEngine::kCompute, took);
    counters.RecordExecution(took);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Read back, so that the loop cannot be dropped.
  const CoreCounters::Snapshot snapshot = counters.snapshot();
  if (snapshot.CountWithOutcome(CommandOutcome::kCompleted) != kCommands) return 1;
  std::printf("%.3f\n", seconds / static_cast<double>(kCommands) * 1e9);
  return 0;
}

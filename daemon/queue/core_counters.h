// What one core's queue has done since it started, by engine, by command
// kind and by outcome: the figures of `neuronctl stats` and of the
// Prometheus exporter's neuron_core_* families.
#ifndef NEURON_RTD_DAEMON_QUEUE_CORE_COUNTERS_H_
#define NEURON_RTD_DAEMON_QUEUE_CORE_COUNTERS_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "neuron/rtd/abi/command_ring.h"

namespace neuron::rtd::queue {

// How a command ended.
enum class CommandOutcome : uint8_t {
  kCompleted,
  // The operator refused its arguments; the stream goes on.
  kRejected,
  // It failed its stream.
  kFailed,
  // Its stream had failed before it ran: drained, never run.
  kAbandoned,
  // It failed its stream by running out of time (a collective whose peers
  // did not come; on hardware, an execution the runtime timed out).
  kTimedOut,
};
inline constexpr size_t kCommandOutcomes = 5;
std::string_view CommandOutcomeName(CommandOutcome outcome);

// Which engine a command's time is charged to: copies (and large fills) to
// the DMA engine, everything else to compute.
enum class CoreEngine : uint8_t { kCompute, kDma };

// Execution times: bucket i counts commands that took [2^(i-1), 2^i) ns.
inline constexpr size_t kExecutionBuckets = 64;

// Thread-safety: one writer thread at a time (the writers are not
// read-modify-write atomic: a counter costs a plain add on the command
// path), snapshot() from any thread; each counter is monotonic on its own,
// a snapshot is not one instant. A core queue keeps one per thread.
class CoreCounters {
 public:
  struct Snapshot {
    std::array<uint64_t, 2> busy_ns{};  // by CoreEngine
    // By opcode (NEURON_RTD_OP_*; opcodes the decoder refused count as
    // NEURON_RTD_OP_INVALID) and outcome.
    std::array<std::array<uint64_t, kCommandOutcomes>, NEURON_RTD_OP_COUNT_> commands{};
    std::array<uint64_t, kExecutionBuckets> execution_log2_ns{};
    uint64_t execution_ns_sum = 0;

    uint64_t busy_total_ns() const { return busy_ns[0] + busy_ns[1]; }
    uint64_t CountWithOutcome(CommandOutcome outcome) const;
    // Adds `other`'s counts (another thread's counters of the same core).
    void Add(const Snapshot& other);
  };

  void AddBusy(CoreEngine engine, uint64_t ns) { Bump(busy_ns_[static_cast<size_t>(engine)], ns); }
  // One command took `ns` from its start to its end on its engine.
  void RecordExecution(uint64_t ns);
  void CountCommand(uint16_t opcode, CommandOutcome outcome);

  Snapshot snapshot() const;

 private:
  static void Bump(std::atomic<uint64_t>& counter, uint64_t by) {
    counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }

  std::array<std::atomic<uint64_t>, 2> busy_ns_{};
  std::array<std::array<std::atomic<uint64_t>, kCommandOutcomes>, NEURON_RTD_OP_COUNT_>
      commands_{};
  std::array<std::atomic<uint64_t>, kExecutionBuckets> execution_log2_ns_{};
  std::atomic<uint64_t> execution_ns_sum_{0};
};

}  // namespace neuron::rtd::queue

#endif  // NEURON_RTD_DAEMON_QUEUE_CORE_COUNTERS_H_

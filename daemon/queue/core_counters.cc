#include "daemon/queue/core_counters.h"

#include <bit>

namespace neuron::rtd::queue {

std::string_view CommandOutcomeName(CommandOutcome outcome) {
  switch (outcome) {
    case CommandOutcome::kCompleted: return "completed";
    case CommandOutcome::kRejected: return "rejected";
    case CommandOutcome::kFailed: return "failed";
    case CommandOutcome::kAbandoned: return "abandoned";
    case CommandOutcome::kTimedOut: return "timed_out";
  }
  return "unknown";
}

uint64_t CoreCounters::Snapshot::CountWithOutcome(CommandOutcome outcome) const {
  uint64_t count = 0;
  for (const auto& by_outcome : commands) count += by_outcome[static_cast<size_t>(outcome)];
  return count;
}

void CoreCounters::Snapshot::Add(const Snapshot& other) {
  for (size_t i = 0; i < busy_ns.size(); ++i) busy_ns[i] += other.busy_ns[i];
  for (size_t op = 0; op < commands.size(); ++op) {
    for (size_t outcome = 0; outcome < kCommandOutcomes; ++outcome) {
      commands[op][outcome] += other.commands[op][outcome];
    }
  }
  for (size_t i = 0; i < kExecutionBuckets; ++i) execution_log2_ns[i] += other.execution_log2_ns[i];
  execution_ns_sum += other.execution_ns_sum;
}

void CoreCounters::RecordExecution(uint64_t ns) {
  Bump(execution_log2_ns_[std::bit_width(ns) % kExecutionBuckets], 1);
  Bump(execution_ns_sum_, ns);
}

void CoreCounters::CountCommand(uint16_t opcode, CommandOutcome outcome) {
  // The opcode comes from client memory: one the decoder refused is
  // counted apart, never used as an index.
  const size_t kind = opcode < NEURON_RTD_OP_COUNT_ ? size_t{opcode} : size_t{NEURON_RTD_OP_INVALID};
  Bump(commands_[kind][static_cast<size_t>(outcome)], 1);
}

CoreCounters::Snapshot CoreCounters::snapshot() const {
  Snapshot snapshot;
  for (size_t i = 0; i < busy_ns_.size(); ++i) {
    snapshot.busy_ns[i] = busy_ns_[i].load(std::memory_order_relaxed);
  }
  for (size_t op = 0; op < commands_.size(); ++op) {
    for (size_t outcome = 0; outcome < kCommandOutcomes; ++outcome) {
      snapshot.commands[op][outcome] = commands_[op][outcome].load(std::memory_order_relaxed);
    }
  }
  for (size_t i = 0; i < kExecutionBuckets; ++i) {
    snapshot.execution_log2_ns[i] = execution_log2_ns_[i].load(std::memory_order_relaxed);
  }
  snapshot.execution_ns_sum = execution_ns_sum_.load(std::memory_order_relaxed);
  return snapshot;
}

}  // namespace neuron::rtd::queue

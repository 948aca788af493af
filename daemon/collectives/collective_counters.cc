#include "daemon/collectives/collective_counters.h"

namespace neuron::rtd::collectives {

void CollectiveCounters::Count(uint32_t kind, bool ok, uint64_t bytes) {
  // Kinds come from client memory: one out of range is counted as invalid.
  const size_t index = kind < NEURON_RTD_COLLECTIVE_KIND_COUNT_ ? size_t{kind} : size_t{0};
  Counters& counters = counters_[index];
  (ok ? counters.completed : counters.failed).fetch_add(1, std::memory_order_relaxed);
  counters.bytes.fetch_add(bytes, std::memory_order_relaxed);
}

CollectiveCounters::Snapshot CollectiveCounters::snapshot() const {
  Snapshot snapshot;
  for (size_t kind = 0; kind < counters_.size(); ++kind) {
    snapshot[kind] = Entry{.completed = counters_[kind].completed.load(std::memory_order_relaxed),
                           .failed = counters_[kind].failed.load(std::memory_order_relaxed),
                           .bytes = counters_[kind].bytes.load(std::memory_order_relaxed)};
  }
  return snapshot;
}

}  // namespace neuron::rtd::collectives

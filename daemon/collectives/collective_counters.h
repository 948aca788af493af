// Collectives the host's communicators have run, by kind and outcome, and
// the bytes they moved: the daemon's figures for `Admin.GetStats`.
#ifndef NEURON_RTD_DAEMON_COLLECTIVES_COLLECTIVE_COUNTERS_H_
#define NEURON_RTD_DAEMON_COLLECTIVES_COLLECTIVE_COUNTERS_H_

#include <array>
#include <atomic>
#include <cstdint>

#include "neuron/rtd/abi/command_ring.h"

namespace neuron::rtd::collectives {

// Thread-safety: every method may be called from any thread (relaxed
// atomics; each counter is monotonic on its own).
class CollectiveCounters {
 public:
  struct Entry {
    uint64_t completed = 0;
    uint64_t failed = 0;
    uint64_t bytes = 0;
  };
  // By NEURON_RTD_COLLECTIVE_* kind; a send and its receive count once,
  // as SEND.
  using Snapshot = std::array<Entry, NEURON_RTD_COLLECTIVE_KIND_COUNT_>;

  // One collective (every rank's part) ran; `bytes` written to receivers.
  void Count(uint32_t kind, bool ok, uint64_t bytes);
  Snapshot snapshot() const;

 private:
  struct Counters {
    std::atomic<uint64_t> completed{0};
    std::atomic<uint64_t> failed{0};
    std::atomic<uint64_t> bytes{0};
  };
  std::array<Counters, NEURON_RTD_COLLECTIVE_KIND_COUNT_> counters_{};
};

}  // namespace neuron::rtd::collectives

#endif  // NEURON_RTD_DAEMON_COLLECTIVES_COLLECTIVE_COUNTERS_H_

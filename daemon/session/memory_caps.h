// The HBM caps a session's client puts on its own cores
// (torch.neuron.set_per_process_memory_fraction), and what the session holds
// on each. They apply beside the daemon's quota, which a client cannot
// raise: a cap only lowers what the session may take.
#ifndef NEURON_RTD_DAEMON_SESSION_MEMORY_CAPS_H_
#define NEURON_RTD_DAEMON_SESSION_MEMORY_CAPS_H_

#include <cstdint>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace neuron::rtd::session {

// Thread-safety: every method may be called from any thread; a Reserve that
// succeeds counts against the cap at once, so concurrent allocations cannot
// together pass it.
class MemoryCaps {
 public:
  explicit MemoryCaps(uint64_t session_id) : session_id_(session_id) {}

  // nullopt removes the core's cap. A cap below what the core holds is
  // kept: reservations fail until it holds less.
  void Set(uint32_t core, std::optional<uint64_t> cap_bytes);
  std::optional<uint64_t> Get(uint32_t core) const;

  // Counts `bytes` on `core`; RESOURCE_EXHAUSTED, naming the cap and what
  // the core holds, when they would pass its cap.
  absl::Status Reserve(uint32_t core, uint64_t bytes);
  // Gives back what a Reserve counted (the segment was freed, or its
  // allocation failed).
  void Release(uint32_t core, uint64_t bytes);

 private:
  struct Core {
    std::optional<uint64_t> cap;
    uint64_t held = 0;
  };
  const uint64_t session_id_;
  mutable absl::Mutex mutex_;
  absl::flat_hash_map<uint32_t, Core> cores_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace neuron::rtd::session

#endif  // NEURON_RTD_DAEMON_SESSION_MEMORY_CAPS_H_

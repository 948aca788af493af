// A session's profile: the commands its PROFILE records ran as, and the
// daemon's own spans of work for it, until the client drains them.
#ifndef NEURON_RTD_DAEMON_SESSION_PROFILE_BUFFER_H_
#define NEURON_RTD_DAEMON_SESSION_PROFILE_BUFFER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/queue/profiled_command.h"

namespace neuron::rtd::session {

// Thread-safety: every method may be called from any thread (the queues add
// commands while an RPC drains).
class ProfileBuffer {
 public:
  // At most `capacity` commands and as many spans are held; more are
  // dropped and counted until the next drain (a client that profiles and
  // never drains costs the daemon a bounded amount).
  explicit ProfileBuffer(size_t capacity) : capacity_(capacity) {}

  // Commands of PROFILE records are kept whatever this says (the record
  // asked); runtime spans only while they are on.
  void set_runtime_spans(bool on) { runtime_spans_.store(on, std::memory_order_relaxed); }
  bool runtime_spans() const { return runtime_spans_.load(std::memory_order_relaxed); }

  void Add(queue::ProfiledCommand command);
  // Dropped unless runtime spans are on.
  void AddSpan(queue::RuntimeSpan span);

  struct Drained {
    std::vector<queue::ProfiledCommand> commands;
    std::vector<queue::RuntimeSpan> spans;
    uint64_t dropped = 0;
    bool more = false;
  };
  // Takes up to `max_records` of the oldest commands and of the oldest spans.
  Drained Drain(size_t max_records);

 private:
  const size_t capacity_;
  std::atomic<bool> runtime_spans_{false};
  absl::Mutex mutex_;
  std::deque<queue::ProfiledCommand> commands_ ABSL_GUARDED_BY(mutex_);
  std::deque<queue::RuntimeSpan> spans_ ABSL_GUARDED_BY(mutex_);
  uint64_t dropped_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace neuron::rtd::session

#endif  // NEURON_RTD_DAEMON_SESSION_PROFILE_BUFFER_H_

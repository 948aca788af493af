// The completion of one rank's group of collective operations (one
// COLLECTIVE record): settles once every operation has run or failed.
#ifndef NEURON_RTD_DAEMON_COLLECTIVES_GROUP_COMPLETION_H_
#define NEURON_RTD_DAEMON_COLLECTIVES_GROUP_COMPLETION_H_

#include <atomic>
#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace neuron::rtd::collectives {

// Thread-safety: any thread. `on_done` runs once, on the thread that settles
// the last operation, without any lock of the completion held.
class GroupCompletion {
 public:
  GroupCompletion(uint32_t operations, std::function<void()> on_done);
  GroupCompletion(const GroupCompletion&) = delete;
  GroupCompletion& operator=(const GroupCompletion&) = delete;

  // Sequentially consistent, as the queue's count of waiting streams: the
  // queue announces its wait and then reads done(); Settle sets done and
  // then reads that count to wake it. Weaker orders could lose the wakeup.
  bool done() const { return done_.load(std::memory_order_seq_cst); }
  // The first failure of an operation of the group; OK before done().
  absl::Status status() const;

  // One operation of the group finished with `status`.
  void Settle(const absl::Status& status);

 private:
  std::atomic<uint32_t> pending_;
  std::atomic<bool> done_{false};
  mutable absl::Mutex mutex_;
  absl::Status status_ ABSL_GUARDED_BY(mutex_);
  std::function<void()> on_done_;
};

}  // namespace neuron::rtd::collectives

#endif  // NEURON_RTD_DAEMON_COLLECTIVES_GROUP_COMPLETION_H_

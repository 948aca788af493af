// The hardware queues of every logical core of the host, created when a core
// gets its first stream.
#ifndef NEURON_RTD_DAEMON_QUEUE_SCHEDULER_H_
#define NEURON_RTD_DAEMON_QUEUE_SCHEDULER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/hal/device.h"
#include "daemon/queue/core_queue.h"

namespace neuron::rtd::queue {

// Thread-safety: every method may be called from any thread.
// Lifetime: the backend outlives the scheduler; queues
// live as long as it. The destructor stops every queue's threads before it
// destroys any queue: a worker finishing a command wakes the other queues.
class Scheduler {
 public:
  Scheduler(hal::Backend& backend, CoreQueueOptions options);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  ~Scheduler();

  // The device that holds host-wide logical core `core`; NOT_FOUND when the
  // host has no such core.
  absl::StatusOr<hal::Device*> DeviceOfCore(uint32_t core) const;

  // Device `index`; nullptr when there is none.
  hal::Device* device(uint32_t index) const {
    return index < backend_.devices().size() ? backend_.devices()[index] : nullptr;
  }

  // The queue of `core`, started on first use.
  absl::StatusOr<CoreQueue*> Queue(uint32_t core);

  // Wakes every queue with a stream waiting on a timeline. Called on every
  // completion: takes no lock.
  void WakeWaiting();

  // The counters of every core's queue; zeros for a core never used.
  std::map<uint32_t, CoreQueue::Stats> Stats() const;

 private:
  hal::Backend& backend_;
  const CoreQueueOptions options_;
  mutable absl::Mutex mutex_;
  std::map<uint32_t, std::unique_ptr<CoreQueue>> queues_ ABSL_GUARDED_BY(mutex_);
  // The queues by core, published once each is started; read without the
  // lock. Entries are never cleared while a worker may read them.
  std::unique_ptr<std::atomic<CoreQueue*>[]> started_;
  const uint32_t core_count_;
};

}  // namespace neuron::rtd::queue

#endif  // NEURON_RTD_DAEMON_QUEUE_SCHEDULER_H_

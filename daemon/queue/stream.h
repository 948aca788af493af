// A stream: one client command ring and its timeline, served by the queue of
// one core.
#ifndef NEURON_RTD_DAEMON_QUEUE_STREAM_H_
#define NEURON_RTD_DAEMON_QUEUE_STREAM_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "daemon/collectives/group_completion.h"
#include "daemon/queue/execution_context.h"
#include "daemon/memory/shared_region.h"
#include "neuron/rtd/abi/command_ring.h"

namespace neuron::rtd::queue {

// Thread-safety: the timeline (completed, failure) may be read from any
// thread; the consumer state is touched only by the queue that serves the
// stream, one thread at a time (the core's worker, or its DMA thread while a
// copy is in flight).
// Lifetime: owned by its session and, while attached, by its core's queue.
class Stream {
 public:
  Stream(uint64_t id, uint64_t session_id, uint32_t core,
         std::unique_ptr<memory::SharedRegion> ring, int doorbell_fd,
         neuron_rtd_completion_slot* slot, std::shared_ptr<void> slot_keep_alive,
         std::weak_ptr<ExecutionContext> context, int priority = 0);
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  uint64_t id() const { return id_; }
  uint64_t session_id() const { return session_id_; }
  uint32_t core() const { return core_; }
  // Lower runs first (as CUDA's): 0 is the default and the lowest.
  int priority() const { return priority_; }
  const memory::SharedRegion& ring() const { return *ring_; }
  int doorbell_fd() const { return doorbell_fd_; }
  std::shared_ptr<ExecutionContext> context() const { return context_.lock(); }

  // The timeline.
  uint64_t completed() const { return completed_.load(std::memory_order_acquire); }
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // Publishes that every command up to `sequence` has finished.
  void Complete(uint64_t sequence);
  // Marks the stream failed (sticky) at `sequence`, `why`; the first
  // failure wins.
  void Fail(uint64_t sequence, int32_t nrt_status, std::string why);
  // Why it failed (empty until it has): what a WAIT on it reports.
  std::string failure() const;
  // The command at `sequence` failed without poisoning the stream (an
  // operator error): counts it for the client, then completes it.
  void CompleteWithOperatorError(uint64_t sequence);

  // Ring consumer state, for the serving queue only.
  uint64_t head() const { return head_; }
  uint64_t last_sequence() const { return last_sequence_; }
  void Consume(uint64_t bytes, uint64_t sequence);
  // The producer's published tail (untrusted).
  uint64_t LoadTail() const;
  // Commands submitted and not yet taken by the queue, counted from the
  // ring as it is now (the client may be rewriting it: an estimate, never
  // more than the ring can hold). Any thread.
  uint64_t QueuedCommands() const;
  void SetConsumerSleeping(bool sleeping);

  // The ring's tail no longer falls on a record boundary: the stream has
  // failed and is never polled again.
  std::atomic<bool> framing_lost{false};
  // A copy of this stream is on the DMA engine; the worker skips the stream.
  std::atomic<bool> in_flight{false};
  // The stream stopped at a WAIT on another timeline.
  std::atomic<bool> waiting{false};
  // Destroyed by its client: the queue runs what was submitted, then lets
  // the stream go (as cudaStreamDestroy does).
  std::atomic<bool> retiring{false};

  // Serving queue only: the group of the COLLECTIVE record at the head of
  // the ring, once posted to its communicator (the record stays in the ring
  // until the group settles; a client that rewrites it meanwhile changes
  // nothing: the posted copy is what runs).
  std::shared_ptr<collectives::GroupCompletion> posted_collective;

  // Serving queue only: when the core (or the DMA engine, for a copy)
  // started the profiled command at the head of the ring; 0 when none is
  // started.
  int64_t profile_started_ns = 0;

  // Worker only: when the worker first saw the stream ready and passed it
  // over (0: not waiting), for its priority's aging.
  int64_t ready_since_ns = 0;

 private:
  void WakeWaiters();

  const uint64_t id_;
  const uint64_t session_id_;
  const uint32_t core_;
  const int priority_;
  const std::unique_ptr<memory::SharedRegion> ring_;
  neuron_rtd_ring_header* const header_;
  const int doorbell_fd_;
  neuron_rtd_completion_slot* const slot_;
  const std::shared_ptr<void> slot_keep_alive_;
  const std::weak_ptr<ExecutionContext> context_;

  std::atomic<uint64_t> completed_{0};
  mutable absl::Mutex failure_mutex_;
  // Set once, before failed_.
  std::atomic<bool> failed_{false};
  std::string failure_ ABSL_GUARDED_BY(failure_mutex_);
  std::atomic<uint64_t> operator_errors_{0};
  uint64_t head_ = 0;
  uint64_t last_sequence_ = 0;
};

// Initialises a ring region's header for a stream; returns the record area's
// capacity. The region must be NEURON_RTD_RING_HEADER_BYTES plus a power of two.
uint64_t InitializeRing(memory::SharedRegion& ring, uint64_t stream_id);

inline constexpr uint64_t kRingHeaderBytes = sizeof(neuron_rtd_ring_header);

}  // namespace neuron::rtd::queue

#endif  // NEURON_RTD_DAEMON_QUEUE_STREAM_H_

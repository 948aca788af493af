// The hardware queue of one logical NeuronCore: a worker thread that serves
// every stream on the core, from every session (sessions take turns by the
// device time they have used, see fair_queue.h; order is kept inside a
// stream, none between streams), and a DMA engine thread so that copies
// overlap compute.
#ifndef NEURON_RTD_DAEMON_QUEUE_CORE_QUEUE_H_
#define NEURON_RTD_DAEMON_QUEUE_CORE_QUEUE_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/common/decaying_sum.h"
#include "daemon/exec/executable.h"
#include "daemon/hal/device.h"
#include "daemon/queue/core_counters.h"
#include "daemon/queue/fair_queue.h"
#include "daemon/queue/record_decoder.h"
#include "daemon/queue/stream.h"

namespace neuron::rtd::queue {

// The most a DMA job moves before the engine turns to the next job: a few
// milliseconds of memcpy. Fills larger than this go to the engine too.
inline constexpr uint64_t kDmaChunkBytes = 8ull << 20;
// Copies up to this size run on the worker, in stream order, rather than on
// the DMA engine: handing one over costs a thread wake-up on each side
// (several microseconds), more than the copy itself.
inline constexpr uint64_t kInlineCopyBytes = 256ull << 10;

struct CoreQueueOptions {
  FairQueueOptions fair;
  // The longest the worker waits for the next command of the session in
  // its turn, when another session has work, before it ends the turn: an
  // eager client's next operator is usually this close behind the last
  // (FairQueue::AnticipationWindow says when waiting pays, and how long).
  std::chrono::nanoseconds anticipation = std::chrono::microseconds(30);
  // The clock that device time and profiles are measured by (nanoseconds);
  // tests replace it. Default: MonotonicNowNs.
  std::function<int64_t()> clock;
  // The CPU time of the calling thread (nanoseconds). The simulated core's
  // commands run on the worker thread, so a turn's device time is at most
  // the CPU time the worker used in it: the rest is the host preempting the
  // worker (a busy 2-core host), which real hardware would not charge to
  // the session that happened to be running. Read twice a turn (a system
  // call). Default: CLOCK_THREAD_CPUTIME_ID; tests replace it with `clock`.
  std::function<int64_t()> thread_cpu_clock;
};

// Thread-safety: Attach, Detach and Wake may be called from any thread.
// Lifetime: the device outlives the queue; the destructor
// stops the threads.
class CoreQueue {
 public:
  // Starts the queue's threads; an error when the kernel refuses its
  // epoll instance or eventfd.
  static absl::StatusOr<std::unique_ptr<CoreQueue>> Create(
      uint32_t core, hal::Device& device, CoreQueueOptions options = {});
  CoreQueue(const CoreQueue&) = delete;
  CoreQueue& operator=(const CoreQueue&) = delete;
  ~CoreQueue();

  uint32_t core() const { return core_; }
  hal::Device& device() const { return device_; }

  // Stops and joins the worker and DMA threads; nothing runs after it.
  // Idempotent; the destructor calls it.
  void Stop();

  // An error (the stream not attached) when its doorbell cannot be watched.
  absl::Status Attach(std::shared_ptr<Stream> stream);
  void Detach(Stream& stream);

  // Counters since the queue started, and its state now.
  struct Stats {
    CoreCounters::Snapshot counters;
    // The share of about the last second the compute engine was busy, 0 to
    // 1 (torch.neuron.utilization).
    double recent_compute_utilization = 0;
    // Commands submitted to the core's streams and not yet started.
    uint64_t queued_commands = 0;
  };
  Stats stats() const;

  // Makes the worker look at every stream again.
  void Wake();
  // Wakes the worker when one of its streams waits on a timeline: called
  // whenever a timeline advances or fails.
  void WakeIfWaiting();

 private:
  // A copy or a large fill on the DMA engine, run in chunks of at most
  // kDmaChunkBytes: between two chunks the engine picks again, so one
  // stream's 16 GiB copy cannot hold the engine for seconds. Sessions share
  // the engine by the time their chunks took, weighted, as they share the
  // core (a session with many streams, each with a copy in flight, gets one
  // session's share); a session's jobs take turns among themselves.
  struct DmaJob {
    std::shared_ptr<Stream> stream;
    std::shared_ptr<ExecutionContext> context;
    DecodedRecord record;
    // Runs bytes [offset, offset + length) of the job.
    std::function<absl::Status(uint64_t offset, uint64_t length)> run;
    uint64_t bytes = 0;
    uint64_t done = 0;
    // Engine time its chunks took so far.
    uint64_t took_ns = 0;
    std::vector<std::shared_ptr<const void>> keep_alive;
  };

  CoreQueue(uint32_t core, hal::Device& device, CoreQueueOptions options, int epoll_fd,
            int wake_fd);

  void WorkerLoop();
  void DmaLoop();
  // The streams of one session on this core.
  struct SessionStreams {
    uint64_t session_id = 0;
    std::vector<std::shared_ptr<Stream>> streams;
    // Worker only: where the round robin among streams of equal priority
    // starts next. Shared by the worker's copies of the list.
    std::shared_ptr<size_t> next_stream = std::make_shared<size_t>(0);
  };
  static constexpr size_t kNoStream = SIZE_MAX;
  // How long an idle worker keeps polling the rings before it sleeps: long
  // enough to catch a client's next command without a doorbell syscall,
  // short enough not to take a core from a 2-core host.
  static constexpr auto kIdleSpin = std::chrono::microseconds(30);
  // Records a turn takes at once from a stream nothing else could outrank.
  static constexpr int kRecordsPerBatch = 16;

  int64_t Now() const { return options_.clock(); }
  // Whether the worker may run the stream's next record now.
  static bool Ready(const Stream& stream);
  // The group's stream to serve next: the best aged priority, round robin
  // among equals; kNoStream when none is ready. `passed` marks streams that
  // made no progress in this turn.
  size_t BestStream(const SessionStreams& group, int64_t now, const std::vector<bool>& passed);
  // The best priority among the group's ready streams, if any is. Sessions
  // are compared unaged: aging lifts a stream above its session's others,
  // while the fair queue already keeps every session from starving.
  static std::optional<int> ReadyPriority(const SessionStreams& group);
  // Retries the group's WAITs the worker stopped at (they take no device
  // time); true when one was satisfied (its stream is no longer passed).
  bool RetryWaits(const SessionStreams& group, std::vector<bool>& passed);
  // Retries every WAIT the worker stopped at (it takes no device time) and
  // lets go of retired streams whose work is done.
  void Tidy(const std::vector<SessionStreams>& sessions);
  // The sessions other than `running` with ready work.
  void FindContenders(const std::vector<SessionStreams>& sessions, uint64_t running,
                      std::vector<Contender>& contenders, std::vector<size_t>& groups);
  // Runs `group`'s ready commands back to back until the fair queue ends
  // its turn.
  void RunTurn(const std::vector<SessionStreams>& sessions, size_t group);
  // Spins for up to `window` until the group has a ready stream.
  bool Anticipate(const SessionStreams& group, const std::vector<bool>& passed,
                  std::chrono::nanoseconds window);
  // With no other session contending, spins for up to kIdleSpin until the
  // group has a ready stream (true); false when another session has work,
  // a stream came or went, or the spin ran out.
  bool SpinAlone(const std::vector<SessionStreams>& sessions, const SessionStreams& group,
                 const std::vector<bool>& passed, uint64_t generation);
  void ForgetDeparted(const std::vector<SessionStreams>& sessions);
  // Serves up to `budget` records of one stream; returns how many it took
  // (a failure that consumed nothing counts as one).
  // Stops early once the clock passes `deadline_ns` or a stream comes or
  // goes.
  int Serve(const std::shared_ptr<Stream>& stream, int budget,
            int64_t deadline_ns = INT64_MAX);
  // Hands a FILL larger than kDmaChunkBytes to the DMA engine.
  absl::Status StartFill(const std::shared_ptr<Stream>& stream,
                         const std::shared_ptr<ExecutionContext>& context, DecodedRecord& record);
  void EnqueueDma(DmaJob job);
  // The queued job whose session's turn it is on the DMA engine; DMA thread.
  std::deque<DmaJob>::iterator PickDmaJob() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  bool HasRunnableWork(const std::vector<SessionStreams>& sessions) const;
  void Sleep(const std::vector<SessionStreams>& sessions);
  enum class Outcome {
    kDone,        // the record ran; the stream may go on
    kCopied,      // a small copy ran on the worker; the stream may go on
    kDispatched,  // a copy went to the DMA engine; the stream waits for it
    kBlocked,     // a WAIT is not yet satisfied; nothing was consumed
  };
  Outcome Execute(const std::shared_ptr<Stream>& stream, ExecutionContext& context,
                  DecodedRecord record);
  // A COPY's job, its locations resolved and checked (run by Execute or by
  // the DMA engine).
  absl::StatusOr<DmaJob> PrepareCopy(const std::shared_ptr<Stream>& stream,
                                     const std::shared_ptr<ExecutionContext>& context,
                                     DecodedRecord& record);
  // `launched`: the executable a LAUNCH ran, if any. On the worker.
  void Finish(Stream& stream, ExecutionContext& context, const DecodedRecord& record,
              const absl::Status& status, const hal::Executable* launched = nullptr) {
    Settle(worker_counters_, stream, context, record, status, launched);
  }
  // Completes or fails the command, counted in the calling thread's
  // `counters`.
  void Settle(CoreCounters& counters, Stream& stream, ExecutionContext& context,
              const DecodedRecord& record, const absl::Status& status,
              const hal::Executable* launched);
  // Hands a finished PROFILE record's timestamps to its session.
  void ReportProfiled(Stream& stream, ExecutionContext& context, const DecodedRecord& record,
                      bool failed, const hal::Executable* launched);
  // Fails the stream at `sequence` (its first failure wins) and counts the
  // command with `outcome`.
  void FailStream(CoreCounters& counters, Stream& stream, ExecutionContext* context,
                  uint64_t sequence, int32_t nrt_status, uint16_t opcode,
                  const std::string& op_name, const std::string& message,
                  CommandOutcome outcome = CommandOutcome::kFailed);

  // Sets `*launched` to the executable it dispatched, if any.
  absl::Status Launch(ExecutionContext& context, const LaunchCommand& launch,
                      const hal::Executable** launched);
  // Posts a COLLECTIVE record's group to its communicator the first time the
  // stream reaches it; blocked (like a WAIT) until the group settles.
  Outcome ExecuteCollective(const std::shared_ptr<Stream>& stream, ExecutionContext& context,
                            const DecodedRecord& record);
  // A failed stream drains a COLLECTIVE without posting it: its peers would
  // wait for it until the timeout, so its communicator is aborted now.
  void AbandonCollective(ExecutionContext& context, const DecodedRecord& record);
  // The group's operations with their buffers checked against the session.
  absl::StatusOr<std::vector<collectives::RankOp>> ResolveCollective(
      ExecutionContext& context, const CollectiveCommand& command, uint32_t rank,
      uint32_t size);

  // A command the worker ran on `engine` for `ns`, start to end.
  void Account(CoreEngine engine, uint64_t ns);
  // Worker only: compute time into recent_compute_ns_, folded in at most
  // every kRecentFoldNs so that the lock is taken about a hundred times a
  // second, not per command.
  void AccountRecentCompute(int64_t now, uint64_t ns);

  const uint32_t core_;
  hal::Device& device_;
  const CoreQueueOptions options_;
  const int highest_priority_;
  const int epoll_fd_;
  const int wake_fd_;

  mutable absl::Mutex mutex_;
  std::vector<SessionStreams> sessions_ ABSL_GUARDED_BY(mutex_);
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::deque<DmaJob> dma_jobs_ ABSL_GUARDED_BY(mutex_);
  absl::CondVar dma_ready_;

  // Bumped by every Attach and Detach: a turn ends when the streams change.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> waiting_streams_{0};
  // Written by the worker and by the DMA thread respectively.
  CoreCounters worker_counters_;
  CoreCounters dma_counters_;
  mutable absl::Mutex recent_mutex_;
  DecayingSum recent_compute_ns_ ABSL_GUARDED_BY(recent_mutex_);
  // Worker only.
  uint64_t unfolded_compute_ns_ = 0;
  int64_t last_fold_ns_ = 0;
  FairQueue fair_;
  // DMA thread only.
  FairQueue dma_fair_;
  std::vector<Contender> dma_contenders_;
  std::vector<uint64_t> known_sessions_;
  std::vector<uint8_t> record_buffer_;
  // Scratch of the worker's turns, kept to spare an allocation a turn.
  std::vector<bool> passed_;
  std::vector<Contender> others_;
  std::vector<size_t> other_groups_;
  std::thread worker_;
  std::thread dma_;
};

}  // namespace neuron::rtd::queue

#endif  // NEURON_RTD_DAEMON_QUEUE_CORE_QUEUE_H_

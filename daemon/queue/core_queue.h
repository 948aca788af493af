// The hardware queue of one logical NeuronCore: a worker thread that serves
// every stream on the core, from every session (sessions take turns with
// equal budgets; order is kept inside a stream, none between streams), and
// a DMA engine thread so that copies overlap compute.
#ifndef NEURON_RTD_DAEMON_QUEUE_CORE_QUEUE_H_
#define NEURON_RTD_DAEMON_QUEUE_CORE_QUEUE_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/exec/executable.h"
#include "daemon/hal/device.h"
#include "daemon/queue/record_decoder.h"
#include "daemon/queue/stream.h"

namespace neuron::rtd::queue {

// The most a DMA job moves before the engine turns to the next job: a few
// milliseconds of memcpy. Fills larger than this go to the engine too.
inline constexpr uint64_t kDmaChunkBytes = 8ull << 20;

// Thread-safety: Attach, Detach and Wake may be called from any thread.
// Lifetime: the device outlives the queue; the destructor
// stops the threads.
class CoreQueue {
 public:
  // Starts the queue's threads; an error when the kernel refuses its
  // epoll instance or eventfd.
  static absl::StatusOr<std::unique_ptr<CoreQueue>> Create(
      uint32_t core, hal::Device& device);
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

  // Counters since the queue started.
  struct Stats {
    uint64_t completed = 0;
    uint64_t failed = 0;
    uint64_t busy_ns = 0;
    // Execution times: bucket i counts commands that took [2^(i-1), 2^i) ns.
    std::array<uint64_t, 64> latency_log2_ns{};
  };
  Stats stats() const;

  // Makes the worker look at every stream again.
  void Wake();
  // Wakes the worker when one of its streams waits on a timeline: called
  // whenever a timeline advances or fails.
  void WakeIfWaiting();

 private:
  // A copy or a large fill on the DMA engine, run in chunks of at most
  // kDmaChunkBytes: between two chunks the engine turns to the next job, so
  // one stream's 16 GiB copy cannot hold the engine for seconds.
  struct DmaJob {
    std::shared_ptr<Stream> stream;
    std::shared_ptr<ExecutionContext> context;
    DecodedRecord record;
    // Runs bytes [offset, offset + length) of the job.
    std::function<absl::Status(uint64_t offset, uint64_t length)> run;
    uint64_t bytes = 0;
    uint64_t done = 0;
    std::vector<std::shared_ptr<const void>> keep_alive;
  };

  CoreQueue(uint32_t core, hal::Device& device, int epoll_fd, int wake_fd);

  void WorkerLoop();
  void DmaLoop();
  // The streams of one session on this core. Sessions take turns, each
  // with the same budget of records a round, however many streams it has:
  // its streams share the budget, the next turn starting after the last
  // stream served.
  struct SessionStreams {
    uint64_t session_id = 0;
    std::vector<std::shared_ptr<Stream>> streams;
    // Worker only: where the session's next turn starts. Shared by the
    // worker's copies of the list.
    std::shared_ptr<size_t> next_stream = std::make_shared<size_t>(0);
  };

  // One session's turn: up to kRecordsPerTurn records of its streams; true
  // when it made progress.
  bool ServeSession(const SessionStreams& group);
  // Serves up to `budget` records of one stream; returns how many it took
  // (a failure that consumed nothing counts as one).
  int Serve(const std::shared_ptr<Stream>& stream, int budget);
  // Hands a FILL larger than kDmaChunkBytes to the DMA engine.
  absl::Status StartFill(const std::shared_ptr<Stream>& stream,
                         const std::shared_ptr<ExecutionContext>& context, DecodedRecord& record);
  void EnqueueDma(DmaJob job);
  bool HasRunnableWork(const std::vector<SessionStreams>& sessions) const;
  void Sleep(const std::vector<SessionStreams>& sessions);
  enum class Outcome {
    kDone,        // the record ran; the stream may go on
    kDispatched,  // a copy went to the DMA engine; the stream waits for it
    kBlocked,     // a WAIT is not yet satisfied; nothing was consumed
  };
  Outcome Execute(const std::shared_ptr<Stream>& stream, ExecutionContext& context,
                  DecodedRecord record);
  absl::Status StartCopy(const std::shared_ptr<Stream>& stream,
                         const std::shared_ptr<ExecutionContext>& context, DecodedRecord& record);
  void Finish(Stream& stream, ExecutionContext& context, const DecodedRecord& record,
              const absl::Status& status);
  void FailStream(Stream& stream, ExecutionContext* context, uint64_t sequence, int32_t nrt_status,
                  uint16_t opcode, const std::string& op_name, const std::string& message);

  absl::Status Launch(ExecutionContext& context, const LaunchCommand& launch);

  void Account(std::chrono::steady_clock::duration took);

  const uint32_t core_;
  hal::Device& device_;
  const int epoll_fd_;
  const int wake_fd_;

  absl::Mutex mutex_;
  std::vector<SessionStreams> sessions_ ABSL_GUARDED_BY(mutex_);
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::deque<DmaJob> dma_jobs_ ABSL_GUARDED_BY(mutex_);
  absl::CondVar dma_ready_;

  std::atomic<int> waiting_streams_{0};
  std::atomic<uint64_t> completed_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> busy_ns_{0};
  std::array<std::atomic<uint64_t>, 64> latency_log2_ns_{};
  size_t next_session_ = 0;  // worker only: round-robin start
  std::vector<uint8_t> record_buffer_;  // worker only
  std::thread worker_;
  std::thread dma_;
};

}  // namespace neuron::rtd::queue

#endif  // NEURON_RTD_DAEMON_QUEUE_CORE_QUEUE_H_

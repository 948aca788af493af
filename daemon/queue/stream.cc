#include "daemon/queue/stream.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstring>

#include "daemon/queue/record_decoder.h"

namespace neuron::rtd::queue {

uint64_t InitializeRing(memory::SharedRegion& ring, uint64_t stream_id) {
  auto* header = reinterpret_cast<neuron_rtd_ring_header*>(ring.data());
  *header = neuron_rtd_ring_header{};
  header->magic = NEURON_RTD_RING_MAGIC;
  header->abi_version_major = NEURON_RTD_ABI_VERSION_MAJOR;
  header->abi_version_minor = NEURON_RTD_ABI_VERSION_MINOR;
  header->header_bytes = kRingHeaderBytes;
  header->capacity_bytes = ring.size() - kRingHeaderBytes;
  header->stream_id = stream_id;
  return header->capacity_bytes;
}

Stream::Stream(uint64_t id, uint64_t session_id, uint32_t core,
               std::unique_ptr<memory::SharedRegion> ring, int doorbell_fd,
               neuron_rtd_completion_slot* slot, std::shared_ptr<void> slot_keep_alive,
               std::weak_ptr<ExecutionContext> context, int priority)
    : id_(id),
      session_id_(session_id),
      core_(core),
      priority_(priority),
      ring_(std::move(ring)),
      header_(reinterpret_cast<neuron_rtd_ring_header*>(ring_->data())),
      doorbell_fd_(doorbell_fd),
      slot_(slot),
      slot_keep_alive_(std::move(slot_keep_alive)),
      context_(std::move(context)) {}

Stream::~Stream() { ::close(doorbell_fd_); }

void Stream::WakeWaiters() {
  std::atomic_ref<uint32_t>(slot_->wake).fetch_add(1, std::memory_order_seq_cst);
  if (std::atomic_ref<uint32_t>(slot_->waiters).load(std::memory_order_seq_cst) != 0) {
    ::syscall(SYS_futex, &slot_->wake, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  }
}

void Stream::Complete(uint64_t sequence) {
  completed_.store(sequence, std::memory_order_release);
  std::atomic_ref<uint64_t>(slot_->completed).store(sequence, std::memory_order_release);
  WakeWaiters();
}

void Stream::CompleteWithOperatorError(uint64_t sequence) {
  const uint64_t count = operator_errors_.fetch_add(1, std::memory_order_relaxed) + 1;
  std::atomic_ref<uint64_t>(slot_->operator_errors).store(count, std::memory_order_release);
  Complete(sequence);
}

void Stream::Fail(uint64_t sequence, int32_t nrt_status, std::string why) {
  {
    absl::MutexLock lock(&failure_mutex_);
    if (failed_.load(std::memory_order_relaxed)) return;
    failure_ = std::move(why);
    failed_.store(true, std::memory_order_release);
  }
  std::atomic_ref<int32_t>(slot_->error_status).store(nrt_status, std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(slot_->error_sequence).store(sequence, std::memory_order_release);
  WakeWaiters();
}

std::string Stream::failure() const {
  absl::MutexLock lock(&failure_mutex_);
  return failure_;
}

void Stream::Consume(uint64_t bytes, uint64_t sequence) {
  head_ += bytes;
  if (sequence != 0) last_sequence_ = sequence;
  std::atomic_ref<uint64_t>(header_->head).store(head_, std::memory_order_release);
}

uint64_t Stream::LoadTail() const {
  return std::atomic_ref<uint64_t>(header_->tail).load(std::memory_order_acquire);
}

uint64_t Stream::QueuedCommands() const {
  const uint64_t capacity = ring_->size() - kRingHeaderBytes;
  const char* records = ring_->data() + kRingHeaderBytes;
  // Both ends are in memory the client can write: neither is trusted.
  uint64_t head = std::atomic_ref<uint64_t>(header_->head).load(std::memory_order_acquire);
  const uint64_t tail = LoadTail();
  if (tail - head > capacity) return 0;
  uint64_t queued = 0;
  while (tail - head >= sizeof(neuron_rtd_record_header)) {
    neuron_rtd_record_header record;
    const uint64_t position = head % capacity;
    if (position > capacity - sizeof(record)) break;
    std::memcpy(&record, records + position, sizeof(record));
    if (!CheckRecordFraming(record, tail - head, capacity - position).ok()) break;
    if (record.opcode != NEURON_RTD_OP_PAD) ++queued;
    head += record.length;
  }
  return queued;
}

void Stream::SetConsumerSleeping(bool sleeping) {
  std::atomic_ref<uint32_t>(header_->consumer_sleeping)
      .store(sleeping ? 1 : 0, std::memory_order_seq_cst);
}

}  // namespace neuron::rtd::queue

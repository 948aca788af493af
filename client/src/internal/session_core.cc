#include "src/internal/session_core.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "neuron/rtd/nrt_status.h"
#include "src/internal/futex.h"
#include "src/internal/proto_convert.h"

namespace neuronrt::internal {
namespace {

// A waiter first spins (a round trip through an idle daemon takes about a
// microsecond), then yields its core for a while (on a busy host the daemon
// needs it to make progress), and only then sleeps on the futex.
constexpr int kSpinIterations = 200;
constexpr int kYieldIterations = 200;
// A sleeping waiter looks at the daemon's liveness this often.
constexpr absl::Duration kLivenessInterval = absl::Milliseconds(50);

inline void CpuRelax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}


template <typename T>
T LoadAcquire(T& field) {
  return std::atomic_ref<T>(field).load(std::memory_order_acquire);
}

}  // namespace

absl::StatusOr<std::shared_ptr<SessionCore>> SessionCore::Open(const SessionOptions& options) {
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options.client);
  if (!client.ok()) return client.status();
  std::shared_ptr<SessionCore> core(new SessionCore());
  core->client_.reset(static_cast<GrpcClient*>(client->release()));
  core->ring_bytes_ = options.ring_bytes;

  std::vector<uint32_t> cores = options.cores;
  if (cores.empty()) {
    if (const char* visible = std::getenv("NEURON_RT_VISIBLE_CORES"); visible && *visible) {
      absl::StatusOr<std::vector<uint32_t>> parsed = ParseCoreList(visible);
      if (!parsed.ok()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("NEURON_RT_VISIBLE_CORES: %s", parsed.status().message()));
      }
      cores = *std::move(parsed);
    }
  }

  v1::OpenSessionRequest request;
  request.set_client_name(options.client_name);
  for (uint32_t core_index : cores) request.add_cores(core_index);
  request.set_abi_version_major(NEURON_RTD_ABI_VERSION_MAJOR);
  request.set_abi_version_minor(NEURON_RTD_ABI_VERSION_MINOR);
  absl::StatusOr<v1::OpenSessionResponse> opened =
      core->client_->Call(&v1::Runtime::Stub::OpenSession, request, "OpenSession");
  if (!opened.ok()) return opened.status();
  const v1::OpenSessionResponse& response = *opened;
  core->id_ = response.session_id();
  core->cores_.assign(response.cores().begin(), response.cores().end());

  absl::StatusOr<std::unique_ptr<DataPlaneConnection>> data_plane = DataPlaneConnection::Attach(
      ResolveDataPlaneAddress(response.data_plane_address(),
                              core->client_->address().socket_path),
      response.session_id(), response.attach_token());
  if (!data_plane.ok()) return data_plane.status();
  core->data_plane_ = *std::move(data_plane);
  absl::StatusOr<ReceivedRegion> page = core->data_plane_->Receive(
      response.completion_page().region_id(), v1::SHARED_REGION_KIND_COMPLETION_PAGE);
  if (!page.ok()) return page.status();
  core->completion_page_ = std::move(page->region);
  absl::StatusOr<ReceivedRegion> staging = core->data_plane_->Receive(
      response.staging().region_id(), v1::SHARED_REGION_KIND_STAGING);
  if (!staging.ok()) return staging.status();
  core->staging_ = std::move(staging->region);
  return core;
}

SessionCore::~SessionCore() = default;

neuron_rtd_completion_slot* SessionCore::slot(uint32_t index) const {
  return reinterpret_cast<neuron_rtd_completion_slot*>(
      completion_page_->data() + sizeof(neuron_rtd_completion_page_header) +
      index * sizeof(neuron_rtd_completion_slot));
}

bool SessionCore::closed_by_daemon() const {
  auto* header = reinterpret_cast<neuron_rtd_completion_page_header*>(completion_page_->data());
  return LoadAcquire(header->session_state) == NEURON_RTD_SESSION_CLOSED;
}

absl::Status SessionCore::CheckAlive() const {
  if (closed_.load()) return absl::FailedPreconditionError(absl::StrFormat("session %d is closed", id_));
  if (closed_by_daemon()) {
    return absl::AbortedError(absl::StrFormat(
        "session %d was closed by neuron-rtd at %s (killed by an administrator, its device was "
        "reset, or the daemon is stopping)",
        id_, client_->address().target));
  }
  if (!data_plane_->Alive()) {
    return absl::UnavailableError(absl::StrFormat(
        "neuron-rtd at %s went away: device lost for session %d", client_->address().target, id_));
  }
  return absl::OkStatus();
}

absl::Status SessionCore::SessionError(absl::Status status) const {
  if (status.ok()) return status;
  const absl::Status alive = CheckAlive();
  if (alive.ok() || alive.message() == status.message()) {
    if (!alive.ok()) status.SetPayload(kStreamFaultPayload, absl::Cord("1"));
    return status;
  }
  absl::Status fault(alive.code(), absl::StrCat(alive.message(), " (", status.message(), ")"));
  fault.SetPayload(kStreamFaultPayload, absl::Cord("1"));
  return fault;
}

namespace {

std::string CommandName(const v1::ErrorDetail& error) {
  return error.op_name().empty()
             ? std::string(neuron_rtd_opcode_name(error.opcode()))
             : absl::StrFormat("%s '%s'", neuron_rtd_opcode_name(error.opcode()), error.op_name());
}

}  // namespace

absl::Status SessionCore::CommandError(uint64_t stream_id, uint64_t sequence,
                                       int32_t nrt_status) const {
  v1::GetStreamErrorsRequest request;
  request.set_session_id(id_);
  request.set_stream_id(stream_id);
  absl::StatusOr<v1::GetStreamErrorsResponse> response =
      client_->Call(&v1::Runtime::Stub::GetStreamErrors, request, "GetStreamErrors");
  const v1::GetStreamErrorsResponse errors =
      response.ok() ? *std::move(response) : v1::GetStreamErrorsResponse();
  absl::Status status;
  for (const v1::ErrorDetail& error : errors.errors()) {
    if (error.sequence() != sequence || !error.sticky()) continue;
    status = absl::Status(neuron::rtd::StatusCodeFor(error.nrt_status()),
                          absl::StrFormat("stream %d: command %d (%s) failed: %s", stream_id,
                                          sequence, CommandName(error), error.message()));
    break;
  }
  if (status.ok()) {
    status = absl::Status(
        neuron::rtd::StatusCodeFor(nrt_status),
        absl::StrFormat("stream %d: command %d failed with status %d%s", stream_id, sequence,
                        nrt_status, errors.errors().empty() ? " (its details are unavailable)" : ""));
  }
  status.SetPayload(kStreamFaultPayload, absl::Cord("1"));
  return status;
}

std::vector<v1::ErrorDetail> SessionCore::OperatorErrors(uint64_t stream_id) const {
  v1::GetStreamErrorsRequest request;
  request.set_session_id(id_);
  request.set_stream_id(stream_id);
  absl::StatusOr<v1::GetStreamErrorsResponse> response =
      client_->Call(&v1::Runtime::Stub::GetStreamErrors, request, "GetStreamErrors");
  std::vector<v1::ErrorDetail> errors;
  if (!response.ok()) return errors;
  for (const v1::ErrorDetail& error : response->errors()) {
    if (!error.sticky()) errors.push_back(error);
  }
  std::sort(errors.begin(), errors.end(), [](const auto& a, const auto& b) {
    return a.sequence() < b.sequence();
  });
  return errors;
}

absl::Status SessionCore::MarkClosed() {
  if (closed_.exchange(true)) return absl::OkStatus();
  v1::CloseSessionRequest request;
  request.set_session_id(id_);
  return client_->Call(&v1::Runtime::Stub::CloseSession, request, "CloseSession").status();
}

std::optional<StagingChunk> SessionCore::TakeFreeChunk(uint64_t size) {
  uint64_t offset = staging_next_;
  if (offset + size > staging_->size()) offset = 0;
  if (!staging_entries_.empty()) {
    // Chunks are taken in ring order and given back oldest first, so the
    // live ones fill one circular span, from the oldest's start to the
    // newest's end: only it need be checked (a deep queue of small copies
    // made a scan of every entry the client's hottest loop).
    const uint64_t start = staging_entries_.front().offset;
    const uint64_t end = staging_entries_.back().offset + staging_entries_.back().size;
    const bool overlaps = start < end ? offset < end && start < offset + size
                                      : offset + size > start || offset < end;
    if (overlaps) return std::nullopt;
  }
  staging_entries_.push_back(
      StagingEntry{.offset = offset, .size = size, .stream = {}, .stream_id = 0, .value = 0,
                   .released = false});
  staging_next_ = offset + size;
  return StagingChunk{.offset = offset, .size = size, .data = staging_->data() + offset};
}

std::optional<StagingChunk> SessionCore::TryAcquireStaging(uint64_t size) {
  absl::MutexLock lock(&staging_mutex_);
  return TakeFreeChunk(std::min(size, staging_chunk_limit()));
}

absl::StatusOr<StagingChunk> SessionCore::AcquireStaging(uint64_t size) {
  size = std::min(size, staging_chunk_limit());
  absl::MutexLock lock(&staging_mutex_);
  while (true) {
    if (std::optional<StagingChunk> chunk = TakeFreeChunk(size)) return *chunk;
    // The oldest chunk goes first; wait for its owner to enqueue it, then
    // for its command to finish.
    StagingEntry& oldest = staging_entries_.front();
    if (!oldest.released) {
      staging_released_.Wait(&staging_mutex_);
      continue;
    }
    const uint64_t stream_id = oldest.stream_id;
    const uint64_t value = oldest.value;
    std::shared_ptr<StreamState> stream = oldest.stream.lock();
    staging_mutex_.Unlock();
    absl::Status finished = stream ? stream->WaitFor(value) : absl::OkStatus();
    stream.reset();
    staging_mutex_.Lock();
    if (!staging_entries_.empty() && staging_entries_.front().value == value &&
        staging_entries_.front().stream_id == stream_id) {
      staging_entries_.pop_front();
    }
    if (!finished.ok()) return finished;
  }
}

bool SessionCore::StagingDone(const StagingEntry& entry) {
  std::shared_ptr<StreamState> stream = entry.stream.lock();
  if (stream == nullptr) return true;
  // A failed stream's commands are drained unrun by the daemon.
  return stream->Finished(entry.value);
}

void SessionCore::ReleaseStaging(const StagingChunk& chunk, Event done) {
  absl::MutexLock lock(&staging_mutex_);
  // Usually the newest chunk: searched from there.
  for (auto entry = staging_entries_.rbegin(); entry != staging_entries_.rend(); ++entry) {
    if (entry->offset == chunk.offset && !entry->released) {
      entry->stream = done.stream_;
      entry->stream_id = done.valid() ? done.stream_id() : 0;
      entry->value = done.value();
      entry->released = true;
      break;
    }
  }
  // Entries whose commands have finished need not be waited for again.
  while (!staging_entries_.empty() && staging_entries_.front().released &&
         StagingDone(staging_entries_.front())) {
    staging_entries_.pop_front();
  }
  staging_released_.SignalAll();
}

bool SessionCore::HoldsStaging(uint64_t stream_id) {
  absl::MutexLock lock(&staging_mutex_);
  return std::any_of(staging_entries_.begin(), staging_entries_.end(),
                     [&](const StagingEntry& entry) { return entry.stream_id == stream_id; });
}

StreamState::StreamState(std::shared_ptr<SessionCore> session, uint64_t id, uint32_t core,
                         std::unique_ptr<MappedRegion> ring, int doorbell_fd, uint32_t slot)
    : session_(std::move(session)),
      id_(id),
      core_(core),
      ring_(std::move(ring)),
      header_(reinterpret_cast<neuron_rtd_ring_header*>(ring_->data())),
      records_(ring_->data() + header_->header_bytes),
      capacity_(header_->capacity_bytes),
      doorbell_fd_(doorbell_fd),
      slot_(session_->slot(slot)) {}

StreamState::~StreamState() {
  // Staging chunks of this stream's commands are reused once the commands
  // finished; with the stream gone nobody could ask, so wait for them now.
  if (session_->HoldsStaging(id_)) WaitFor(last_submitted()).IgnoreError();
  ::close(doorbell_fd_);
  if (session_->closed_by_daemon() || !session_->data_plane().Alive()) return;
  v1::DestroyStreamRequest request;
  request.set_session_id(session_->id());
  request.set_stream_id(id_);
  session_->client().Call(&v1::Runtime::Stub::DestroyStream, request, "DestroyStream").IgnoreError();
}

uint64_t StreamState::last_submitted() const { return last_submitted_.load(); }

absl::Status StreamState::FailureAt(uint64_t value) const {
  // A session the daemon closed (or a daemon gone) fails every stream; say
  // why, not which.
  auto session_fault = [&] { return session_->SessionError(session_->CheckAlive()); };
  if (session_->closed_by_daemon()) return session_fault();
  const uint64_t error_sequence = LoadAcquire(slot_->error_sequence);
  if (error_sequence != 0 && error_sequence <= value) {
    return session_->CommandError(id_, error_sequence, LoadAcquire(slot_->error_status));
  }
  return session_fault();
}

absl::Status StreamState::TakeOperatorError(uint64_t value) const {
  const uint64_t counted = LoadAcquire(slot_->operator_errors);
  if (counted == operator_errors_seen_.load(std::memory_order_acquire)) return absl::OkStatus();
  absl::MutexLock lock(&report_mutex_);
  if (counted == operator_errors_seen_.load(std::memory_order_acquire)) return absl::OkStatus();
  const std::vector<v1::ErrorDetail> errors = session_->OperatorErrors(id_);
  const v1::ErrorDetail* first = nullptr;
  size_t more = 0;
  bool later = false;
  for (const v1::ErrorDetail& error : errors) {
    if (error.sequence() <= reported_through_) continue;
    if (error.sequence() > value) {
      later = true;
    } else if (first == nullptr) {
      first = &error;
    } else {
      ++more;
    }
  }
  // Errors of later commands wait for the synchronization that covers them.
  if (!later) operator_errors_seen_.store(counted, std::memory_order_release);
  if (first == nullptr) return absl::OkStatus();
  // The first error is what the program did wrong; the ones after it up to
  // here are usually its consequences, and are reported with it.
  reported_through_ = std::max(reported_through_, value);
  absl::Status status(
      neuron::rtd::StatusCodeFor(first->nrt_status()),
      absl::StrFormat("stream %d: command %d (%s) failed: %s%s", id_, first->sequence(),
                      CommandName(*first), first->message(),
                      more == 0 ? std::string()
                                : absl::StrFormat(" (and %d later command(s) on stream %d failed "
                                                  "too)",
                                                  more, id_)));
  status.SetPayload(kOperatorErrorTypePayload, absl::Cord(first->error_type()));
  return status;
}

bool StreamState::Finished(uint64_t value) const {
  return LoadAcquire(slot_->completed) >= value || LoadAcquire(slot_->error_sequence) != 0 ||
         session_->closed_by_daemon() || !session_->data_plane().Alive();
}

absl::StatusOr<bool> StreamState::IsComplete(uint64_t value) const {
  if (LoadAcquire(slot_->completed) >= value) {
    if (absl::Status error = TakeOperatorError(value); !error.ok()) return error;
    return true;
  }
  if (absl::Status failure = FailureAt(value); !failure.ok()) return failure;
  return false;
}

absl::Status StreamState::WaitFor(uint64_t value) const { return Wait(value, /*report=*/true); }

void StreamState::WaitSettled(uint64_t value) const { Wait(value, /*report=*/false).IgnoreError(); }

absl::Status StreamState::Wait(uint64_t value, bool report) const {
  auto done = [&] { return report ? TakeOperatorError(value) : absl::OkStatus(); };
  for (int spin = 0; spin < kSpinIterations + kYieldIterations; ++spin) {
    if (LoadAcquire(slot_->completed) >= value) return done();
    if (LoadAcquire(slot_->error_sequence) != 0) break;
    if (spin < kSpinIterations) {
      CpuRelax();
    } else {
      sched_yield();
    }
  }
  while (true) {
    const uint32_t observed = LoadAcquire(slot_->wake);
    if (LoadAcquire(slot_->completed) >= value) return done();
    if (!report && Finished(value)) return absl::OkStatus();
    if (absl::Status failure = FailureAt(value); !failure.ok()) return failure;
    std::atomic_ref<uint32_t>(slot_->waiters).fetch_add(1, std::memory_order_seq_cst);
    if (LoadAcquire(slot_->completed) < value) FutexWait(&slot_->wake, observed, kLivenessInterval);
    std::atomic_ref<uint32_t>(slot_->waiters).fetch_sub(1, std::memory_order_seq_cst);
  }
}

absl::Status StreamState::WaitForSpace(uint64_t needed) {
  while (true) {
    const uint32_t observed = LoadAcquire(slot_->wake);
    const uint64_t head = LoadAcquire(header_->head);
    if (capacity_ - (tail_ - head) >= needed) return absl::OkStatus();
    if (absl::Status failure = FailureAt(UINT64_MAX); !failure.ok()) return failure;
    std::atomic_ref<uint32_t>(slot_->waiters).fetch_add(1, std::memory_order_seq_cst);
    if (capacity_ - (tail_ - LoadAcquire(header_->head)) < needed) {
      FutexWait(&slot_->wake, observed, kLivenessInterval);
    }
    std::atomic_ref<uint32_t>(slot_->waiters).fetch_sub(1, std::memory_order_seq_cst);
  }
}

absl::StatusOr<uint64_t> StreamState::Submit(uint16_t opcode, std::span<const uint8_t> payload,
                                             std::string_view op_name,
                                             uint64_t timing_correlation) {
  op_name = op_name.substr(0, NEURON_RTD_MAX_OP_NAME_BYTES);
  const uint32_t length = neuron_rtd_record_length(static_cast<uint32_t>(payload.size()),
                                                   static_cast<uint32_t>(op_name.size()));
  if (length == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a %s command of %d payload bytes exceeds the %d-byte record limit",
        neuron_rtd_opcode_name(opcode), payload.size(), NEURON_RTD_MAX_RECORD_BYTES));
  }
  absl::MutexLock lock(&mutex_);
  // A poisoned stream runs nothing more: its error surfaces at once.
  if (LoadAcquire(slot_->error_sequence) != 0 || session_->closed_by_daemon()) {
    return FailureAt(UINT64_MAX);
  }
  const uint64_t position = tail_ % capacity_;
  if (capacity_ - position < length) {
    // The record does not fit before the ring's end: pad to the end and
    // publish the pad on its own. Waiting for pad and record at once could
    // ask for more room than the ring has (a 4 KiB record in a 4 KiB ring).
    const uint64_t pad = capacity_ - position;
    if (absl::Status space = WaitForSpace(pad); !space.ok()) return space;
    neuron_rtd_record_header filler{};
    filler.length = static_cast<uint32_t>(pad);
    filler.opcode = NEURON_RTD_OP_PAD;
    std::memcpy(records_ + position, &filler, sizeof(filler));
    tail_ += pad;
    if (absl::Status published = PublishTail(); !published.ok()) return published;
  }
  if (absl::Status space = WaitForSpace(length); !space.ok()) return space;
  const uint64_t sequence = last_submitted_.load() + 1;
  char* record = records_ + tail_ % capacity_;
  neuron_rtd_encode_record(record, opcode, sequence, payload.data(),
                           static_cast<uint32_t>(payload.size()), op_name.data(),
                           static_cast<uint32_t>(op_name.size()));
  if (timing_correlation != 0 || session_->profile().Profiles(core_)) {
    neuron_rtd_mark_record_profiled(
        record, timing_correlation != 0 ? timing_correlation : ThreadCorrelationId());
    // Before the record is published: a drain may find it done at once.
    session_->profile().NoteSubmit(id_, sequence);
  }
  tail_ += length;
  last_submitted_.store(sequence);
  if (absl::Status published = PublishTail(); !published.ok()) return published;
  return sequence;
}

absl::Status StreamState::PublishTail() {
  std::atomic_ref<uint64_t>(header_->tail).store(tail_, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (std::atomic_ref<uint32_t>(header_->consumer_sleeping).load(std::memory_order_seq_cst) != 0) {
    const uint64_t one = 1;
    if (::write(doorbell_fd_, &one, sizeof(one)) < 0 && errno != EAGAIN) {
      return absl::ErrnoToStatus(errno, "ringing the stream's doorbell");
    }
  }
  return absl::OkStatus();
}

}  // namespace neuronrt::internal

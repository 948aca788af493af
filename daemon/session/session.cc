#include "daemon/session/session.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <bit>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "neuron/rtd/abi/data_plane.h"
#include "spdlog/spdlog.h"

namespace neuron::rtd::session {
namespace {

int64_t MonotonicNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Bound on recorded asynchronous errors per session: the first failure of
// each stream is kept, so this only caps a client that churns streams.
constexpr size_t kMaxRecordedErrors = 1024;

neuron_rtd_completion_page_header* PageHeader(const memory::SharedRegion& page) {
  return reinterpret_cast<neuron_rtd_completion_page_header*>(page.data());
}

neuron_rtd_completion_slot* Slot(const memory::SharedRegion& page, uint32_t index) {
  return reinterpret_cast<neuron_rtd_completion_slot*>(
      page.data() + sizeof(neuron_rtd_completion_page_header) +
      index * sizeof(neuron_rtd_completion_slot));
}

}  // namespace

uint64_t CompletionPageBytes(uint32_t slots) {
  const uint64_t bytes = sizeof(neuron_rtd_completion_page_header) +
                         uint64_t{slots} * sizeof(neuron_rtd_completion_slot);
  return (bytes + 4095) / 4096 * 4096;
}

Session::Session(uint64_t id, const PeerCredentials& owner, std::string client_name,
                 std::vector<uint32_t> cores, const SessionLimits& limits,
                 std::unique_ptr<memory::SharedRegion> completion_page,
                 std::unique_ptr<memory::SharedRegion> staging, queue::Scheduler& scheduler,
                 memory::MemoryManager& memory, std::shared_ptr<Grant> grant)
    : id_(id),
      owner_(owner),
      client_name_(std::move(client_name)),
      cores_(std::move(cores)),
      limits_(limits),
      opened_at_(absl::Now()),
      completion_page_(std::move(completion_page)),
      staging_(std::move(staging)),
      scheduler_(scheduler),
      memory_(memory),
      grant_(std::move(grant)),
      share_weight_(std::max<uint32_t>(1, limits.share_weight)),
      recent_device_time_(static_cast<double>(absl::ToInt64Nanoseconds(kShareWindow))) {
  neuron_rtd_completion_page_header* header = PageHeader(*completion_page_);
  *header = neuron_rtd_completion_page_header{};
  header->magic = NEURON_RTD_COMPLETION_MAGIC;
  header->abi_version_major = NEURON_RTD_ABI_VERSION_MAJOR;
  header->abi_version_minor = NEURON_RTD_ABI_VERSION_MINOR;
  header->slot_count = limits_.max_streams;
  header->session_state = NEURON_RTD_SESSION_OPEN;
  absl::MutexLock lock(&mutex_);
  slot_states_.assign(limits_.max_streams, SlotState::kFree);
  slot_owners_.resize(limits_.max_streams);
}

Session::~Session() { Close(NEURON_RTD_STATUS_CLOSED, "session destroyed"); }

SessionStats Session::stats() const {
  uint32_t executables;
  {
    absl::MutexLock lock(&executables_mutex_);
    executables = static_cast<uint32_t>(executables_.size());
  }
  double recent_share;
  {
    absl::MutexLock lock(&share_mutex_);
    recent_share = recent_device_time_.ValueAt(MonotonicNanos()) / recent_device_time_.window_ns();
  }
  absl::MutexLock lock(&mutex_);
  uint64_t queued = 0;
  for (const auto& [id, stream] : streams_) queued += stream->QueuedCommands();
  return SessionStats{.hbm_bytes = segments_.bytes() - imported_bytes_,
                      .streams = static_cast<uint32_t>(streams_.size()),
                      .commands_completed = commands_completed_.load(),
                      .commands_failed = commands_failed_.load(),
                      .device_time_ns = device_time_ns_.load(std::memory_order_relaxed),
                      .recent_share = recent_share,
                      .share_weight = share_weight(),
                      .queued_commands = queued,
                      .host_memory_bytes = host_memory_bytes_,
                      .executables = executables};
}

void Session::AddDeviceTime(uint64_t ns) {
  device_time_ns_.fetch_add(ns, std::memory_order_relaxed);
  absl::MutexLock lock(&share_mutex_);
  recent_device_time_.Add(MonotonicNanos(), static_cast<double>(ns));
}

absl::Status Session::CheckOpen() const {
  if (closed()) return absl::FailedPreconditionError(absl::StrFormat("session %d is closed", id_));
  return absl::OkStatus();
}

absl::Status Session::CheckCore(uint32_t core) const {
  if (std::find(cores_.begin(), cores_.end(), core) == cores_.end()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("core %d is not one of session %d's cores", core, id_));
  }
  return absl::OkStatus();
}

absl::Status Session::Attach(int fd) {
  {
    absl::MutexLock lock(&mutex_);
    if (data_fd_ >= 0) {
      ::close(fd);
      return absl::AlreadyExistsError(absl::StrFormat("session %d is already attached", id_));
    }
    data_fd_ = fd;
  }
  if (absl::Status sent = SendRegion(*completion_page_, -1); !sent.ok()) return sent;
  return SendRegion(*staging_, -1);
}

bool Session::attached() const {
  absl::MutexLock lock(&mutex_);
  return data_fd_ >= 0;
}

absl::Status Session::SendRegion(const memory::SharedRegion& region, int extra_fd) {
  neuron_rtd_region_message message{.magic = NEURON_RTD_REGION_MAGIC,
                                    .kind = region.kind(),
                                    .region_id = region.id(),
                                    .size_bytes = region.size(),
                                    .fd_count = extra_fd >= 0 ? 2u : 1u,
                                    .reserved0 = 0};
  iovec payload{.iov_base = &message, .iov_len = sizeof(message)};
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  msghdr header{};
  header.msg_iov = &payload;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = CMSG_SPACE(message.fd_count * sizeof(int));
  cmsghdr* rights = CMSG_FIRSTHDR(&header);
  rights->cmsg_level = SOL_SOCKET;
  rights->cmsg_type = SCM_RIGHTS;
  rights->cmsg_len = CMSG_LEN(message.fd_count * sizeof(int));
  const int fds[2] = {region.fd(), extra_fd};
  std::memcpy(CMSG_DATA(rights), fds, message.fd_count * sizeof(int));
  absl::MutexLock lock(&mutex_);
  if (data_fd_ < 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "session %d has no data-plane connection: attach it before creating regions", id_));
  }
  if (::sendmsg(data_fd_, &header, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(message))) {
    return absl::UnavailableError(absl::StrFormat(
        "cannot send region %d to session %d's client: %s", region.id(), id_,
        std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<StreamRegion> Session::CreateStream(uint32_t core, uint64_t ring_bytes,
                                                   int32_t priority) {
  if (absl::Status status = CheckOpen(); !status.ok()) return status;
  if (absl::Status status = CheckCore(core); !status.ok()) return status;
  const uint64_t limit = std::min<uint64_t>(limits_.max_ring_bytes, NEURON_RTD_MAX_RING_BYTES);
  // Bounded first: std::bit_ceil of a value past 2^63 is undefined.
  if (ring_bytes > limit) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "ring of %d bytes exceeds session %d's limit of %d bytes", ring_bytes, id_, limit));
  }
  const uint64_t capacity = std::bit_ceil(std::max<uint64_t>(ring_bytes, NEURON_RTD_MIN_RING_BYTES));
  if (capacity > limit) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "ring of %d bytes exceeds session %d's limit of %d bytes", ring_bytes, id_, limit));
  }
  absl::StatusOr<queue::CoreQueue*> queue = scheduler_.Queue(core);
  if (!queue.ok()) return queue.status();

  uint64_t stream_id;
  uint32_t slot = 0;
  {
    absl::MutexLock lock(&mutex_);
    bool found = false;
    for (slot = 0; slot < slot_states_.size(); ++slot) {
      if (slot_states_[slot] == SlotState::kFree ||
          (slot_states_[slot] == SlotState::kAssigned && slot_owners_[slot].expired())) {
        found = true;
        break;
      }
    }
    if (!found) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "session %d has %d streams, its limit", id_, limits_.max_streams));
    }
    slot_states_[slot] = SlotState::kReserved;
    stream_id = next_id_++;
  }
  auto release_slot = [&] {
    absl::MutexLock lock(&mutex_);
    slot_states_[slot] = SlotState::kFree;
  };
  absl::StatusOr<std::unique_ptr<memory::SharedRegion>> ring =
      memory::SharedRegion::Create(stream_id, NEURON_RTD_REGION_COMMAND_RING,
                           queue::kRingHeaderBytes + capacity,
                           absl::StrFormat("neuron-rtd-ring-%d-%d", id_, stream_id));
  if (!ring.ok()) {
    release_slot();
    return ring.status();
  }
  queue::InitializeRing(**ring, stream_id);
  const int doorbell = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (doorbell < 0) {
    release_slot();
    return absl::ErrnoToStatus(errno, "eventfd for a stream's doorbell");
  }
  neuron_rtd_completion_slot* completion = Slot(*completion_page_, slot);
  *completion = neuron_rtd_completion_slot{};
  // Out-of-range priorities are clamped, as CUDA clamps them.
  const int highest =
      -static_cast<int>(std::max<uint32_t>(1, (*queue)->device().info().stream_priority_levels) - 1);
  const int clamped = std::clamp<int32_t>(priority, highest, queue::kLowestStreamPriority);
  auto stream = std::make_shared<queue::Stream>(stream_id, id_, core, *std::move(ring), doorbell,
                                                completion, completion_page_, weak_from_this(),
                                                clamped);
  if (absl::Status sent = SendRegion(stream->ring(), doorbell); !sent.ok()) {
    release_slot();
    return sent;
  }
  {
    // Checked and attached under the lock that Close takes to collect the
    // streams it detaches: a stream created while the session closes is
    // either collected by Close or never attached.
    absl::MutexLock lock(&mutex_);
    if (closed()) {
      slot_states_[slot] = SlotState::kFree;
      return CheckOpen();
    }
    if (absl::Status attached = (*queue)->Attach(stream); !attached.ok()) {
      slot_states_[slot] = SlotState::kFree;
      return attached;
    }
    streams_.emplace(stream_id, stream);
    slot_owners_[slot] = stream;
    slot_states_[slot] = SlotState::kAssigned;
  }
  return StreamRegion{.stream = stream, .completion_slot = slot};
}

absl::Status Session::DestroyStream(uint64_t stream_id) {
  if (absl::Status status = CheckOpen(); !status.ok()) return status;
  std::shared_ptr<queue::Stream> stream;
  {
    absl::MutexLock lock(&mutex_);
    auto it = streams_.find(stream_id);
    if (it == streams_.end()) {
      return absl::NotFoundError(absl::StrFormat("session %d has no stream %d", id_, stream_id));
    }
    stream = std::move(it->second);
    streams_.erase(it);
    std::erase_if(retiring_, [](const auto& entry) { return entry.second.expired(); });
    retiring_.emplace(stream_id, stream);
  }
  // The queue finishes what the client submitted, then lets the stream go.
  stream->retiring.store(true, std::memory_order_release);
  absl::StatusOr<queue::CoreQueue*> queue = scheduler_.Queue(stream->core());
  if (queue.ok()) (*queue)->Wake();
  return absl::OkStatus();
}

std::vector<queue::StreamError> Session::StreamErrors(uint64_t stream_id) const {
  absl::MutexLock lock(&mutex_);
  std::vector<queue::StreamError> errors;
  for (const queue::StreamError& error : errors_) {
    if (stream_id == 0 || error.stream_id == stream_id) errors.push_back(error);
  }
  return errors;
}

bool Session::Close(int32_t nrt_status, const std::string& reason) {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return false;
  neuron_rtd_completion_page_header* header = PageHeader(*completion_page_);
  std::atomic_ref<int32_t>(header->session_status).store(nrt_status, std::memory_order_relaxed);
  std::atomic_ref<uint32_t>(header->session_state)
      .store(NEURON_RTD_SESSION_CLOSED, std::memory_order_release);

  std::map<uint64_t, std::shared_ptr<queue::Stream>> streams;
  std::map<uint64_t, std::shared_ptr<memory::SharedRegion>> host_memory;
  int data_fd;
  {
    absl::MutexLock lock(&mutex_);
    streams.swap(streams_);
    for (auto& [id, weak] : retiring_) {
      if (std::shared_ptr<queue::Stream> retiring = weak.lock()) streams.emplace(id, retiring);
    }
    retiring_.clear();
    host_memory.swap(host_memory_);
    host_memory_bytes_ = 0;
    data_fd = data_fd_;
    data_fd_ = -1;
  }
  for (auto& [id, stream] : streams) {
    stream->Fail(stream->completed() + 1, nrt_status, "its session closed");
    absl::StatusOr<queue::CoreQueue*> queue = scheduler_.Queue(stream->core());
    if (queue.ok()) (*queue)->Detach(*stream);
  }
  segments_.TakeAll();
  ForgetSegments();
  std::map<uint64_t, exec::ExecutableHold> executables;
  {
    absl::MutexLock lock(&executables_mutex_);
    executables.swap(executables_);
  }
  executables.clear();
  std::map<uint64_t, queue::CommunicatorMembership> communicators;
  {
    absl::MutexLock lock(&communicators_mutex_);
    communicators.swap(communicators_);
  }
  for (auto& [handle, membership] : communicators) {
    membership.communicator->Leave(membership.rank, "its session closed: " + reason);
  }
  if (data_fd >= 0) {
    ::shutdown(data_fd, SHUT_RDWR);
    ::close(data_fd);
  }
  scheduler_.WakeWaiting();
  spdlog::info("session {} (pid {}, {}) closed: {}", id_, owner_.pid, client_name_, reason);
  return true;
}

absl::StatusOr<queue::DeviceSpan> Session::ResolveDevice(uint64_t address, uint64_t length) {
  absl::StatusOr<memory::SegmentRef> segment = segments_.Resolve(address, length);
  if (!segment.ok()) return segment.status();
  hal::Device* device = scheduler_.device((*segment)->device_index());
  return queue::DeviceSpan{.segment = *std::move(segment), .device = device, .address = address};
}

absl::StatusOr<queue::HostSpan> Session::ResolveStaging(uint64_t offset, uint64_t length) {
  char* data = staging_->Slice(offset, length);
  if (data == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "staging range [%d, +%d) is outside the %d-byte staging arena", offset, length,
        staging_->size()));
  }
  return queue::HostSpan{.keep_alive = staging_, .data = data};
}

absl::StatusOr<queue::HostSpan> Session::ResolveHostMemory(uint64_t host_memory_id,
                                                           uint64_t offset, uint64_t length) {
  std::shared_ptr<memory::SharedRegion> region;
  {
    absl::MutexLock lock(&mutex_);
    auto it = host_memory_.find(host_memory_id);
    if (it == host_memory_.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "host memory %d is not registered in session %d", host_memory_id, id_));
    }
    region = it->second;
  }
  char* data = region->Slice(offset, length);
  if (data == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "range [%d, +%d) is outside host memory %d (%d bytes)", offset, length, host_memory_id,
        region->size()));
  }
  return queue::HostSpan{.keep_alive = region, .data = data};
}

std::shared_ptr<queue::Stream> Session::FindStream(uint64_t stream_id) {
  absl::MutexLock lock(&mutex_);
  if (auto it = streams_.find(stream_id); it != streams_.end()) return it->second;
  if (auto it = retiring_.find(stream_id); it != retiring_.end()) return it->second.lock();
  return nullptr;
}

void Session::OnStreamRetired(uint64_t stream_id, const queue::RetiredTimeline& timeline) {
  // Enough for any program's streams in flight; a client that destroys
  // millions of streams cannot grow it.
  constexpr size_t kMaxRetiredTimelines = 4096;
  absl::MutexLock lock(&retired_mutex_);
  retired_[stream_id] = timeline;
  while (retired_.size() > kMaxRetiredTimelines) retired_.erase(retired_.begin());
}

std::optional<queue::RetiredTimeline> Session::FindRetiredTimeline(uint64_t stream_id) {
  absl::MutexLock lock(&retired_mutex_);
  auto it = retired_.find(stream_id);
  if (it == retired_.end()) return std::nullopt;
  return it->second;
}

absl::Status Session::AddExecutable(exec::ExecutableHold hold) {
  absl::MutexLock lock(&executables_mutex_);
  // Checked under the lock Close takes to collect the holds.
  if (absl::Status open = CheckOpen(); !open.ok()) return open;
  const uint64_t id = hold.executable()->id;
  executables_.try_emplace(id, std::move(hold));
  return absl::OkStatus();
}

absl::Status Session::UnloadExecutable(uint64_t executable_id) {
  exec::ExecutableHold released;
  absl::MutexLock lock(&executables_mutex_);
  auto it = executables_.find(executable_id);
  if (it == executables_.end()) {
    return absl::NotFoundError(absl::StrFormat("session %d holds no executable %d", id_,
                                               executable_id));
  }
  released = std::move(it->second);
  executables_.erase(it);
  return absl::OkStatus();
}

std::shared_ptr<const exec::Executable> Session::FindExecutable(uint64_t executable_id) {
  absl::MutexLock lock(&executables_mutex_);
  auto it = executables_.find(executable_id);
  return it == executables_.end() ? nullptr : it->second.executable();
}

void Session::OnCommandDone(const queue::Stream&, bool failed) {
  (failed ? commands_failed_ : commands_completed_).fetch_add(1, std::memory_order_relaxed);
  scheduler_.WakeWaiting();
}

void Session::OnStreamError(const queue::StreamError& error) {
  spdlog::debug("session {} stream {}: command {} ({}) failed: {}", id_, error.stream_id,
                error.sequence, error.op_name, error.message);
  absl::MutexLock lock(&mutex_);
  if (errors_.size() >= kMaxRecordedErrors) {
    // Operator errors may come without end; a stream's one fault is kept.
    auto oldest = std::find_if(errors_.begin(), errors_.end(),
                               [](const queue::StreamError& kept) { return !kept.sticky; });
    if (oldest == errors_.end()) return;
    errors_.erase(oldest);
  }
  errors_.push_back(error);
}

std::string Session::Description() const {
  return absl::StrFormat("session %d, pid %d", id_, owner_.pid);
}

absl::StatusOr<uint64_t> Session::AddCommunicator(queue::CommunicatorMembership membership) {
  {
    absl::MutexLock lock(&communicators_mutex_);
    if (!closed() && communicators_.size() < kMaxCommunicatorsPerSession) {
      const uint64_t handle = next_communicator_handle_++;
      communicators_.emplace(handle, std::move(membership));
      return handle;
    }
  }
  const bool was_closed = closed();
  membership.communicator->Leave(membership.rank, was_closed ? "its session closed"
                                                             : "its session has too many");
  if (was_closed) return absl::FailedPreconditionError("the session is closed");
  return absl::ResourceExhaustedError(absl::StrFormat(
      "session %d already holds %d communicators", id_, kMaxCommunicatorsPerSession));
}

absl::Status Session::DestroyCommunicator(uint64_t handle) {
  queue::CommunicatorMembership membership;
  {
    absl::MutexLock lock(&communicators_mutex_);
    auto it = communicators_.find(handle);
    if (it == communicators_.end()) {
      return absl::NotFoundError(
          absl::StrFormat("session %d holds no communicator %d", id_, handle));
    }
    membership = std::move(it->second);
    communicators_.erase(it);
  }
  membership.communicator->Leave(membership.rank, "it destroyed the communicator");
  return absl::OkStatus();
}

absl::StatusOr<queue::CommunicatorMembership> Session::FindCommunicator(uint64_t handle) {
  absl::MutexLock lock(&communicators_mutex_);
  auto it = communicators_.find(handle);
  if (it == communicators_.end()) {
    return absl::NotFoundError(
        absl::StrFormat("communicator %d is not one this session joined", handle));
  }
  return it->second;
}

}  // namespace neuron::rtd::session

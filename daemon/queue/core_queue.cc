#include "daemon/queue/core_queue.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "absl/strings/cord.h"
#include "daemon/common/monotonic_clock.h"
#include "neuron/rtd/nrt_status.h"
#include "absl/strings/str_format.h"
#include "spdlog/spdlog.h"

namespace neuron::rtd::queue {
namespace {

// torch.neuron.utilization's window, as NVML's sample period (up to 1 s).
constexpr double kRecentWindowNs = 1e9;
constexpr int64_t kRecentFoldNs = 10'000'000;

void DrainEventFd(int fd) {
  uint64_t value;
  while (::read(fd, &value, sizeof(value)) == sizeof(value)) {
  }
}

// The ring's opcodes are this layer's; the device knows kinds of commands.
hal::CommandKind CommandKindOf(uint16_t opcode) {
  switch (opcode) {
    case NEURON_RTD_OP_COPY:
    case NEURON_RTD_OP_FILL:
      return hal::CommandKind::kTransfer;
    case NEURON_RTD_OP_COLLECTIVE:
      return hal::CommandKind::kCollective;
    case NEURON_RTD_OP_LAUNCH:
      return hal::CommandKind::kLaunch;
    default:
      return hal::CommandKind::kSync;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<CoreQueue>> CoreQueue::Create(
    uint32_t core, hal::Device& device, CoreQueueOptions options) {
  const int epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrFormat("core %d: epoll_create1", core));
  }
  const int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event event{.events = EPOLLIN, .data = {.fd = wake_fd}};
  if (wake_fd < 0 || ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &event) != 0) {
    const absl::Status failed =
        absl::ErrnoToStatus(errno, absl::StrFormat("core %d: the queue's wake eventfd", core));
    if (wake_fd >= 0) ::close(wake_fd);
    ::close(epoll_fd);
    return failed;
  }
  if (!options.thread_cpu_clock) {
    options.thread_cpu_clock = [] {
      timespec now{};
      ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
      return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
    };
  }
  if (!options.clock) options.clock = [] { return MonotonicNowNs(); };
  return std::unique_ptr<CoreQueue>(
      new CoreQueue(core, device, std::move(options), epoll_fd, wake_fd));
}

CoreQueue::CoreQueue(uint32_t core, hal::Device& device, CoreQueueOptions options, int epoll_fd,
                     int wake_fd)
    : core_(core),
      device_(device),
      options_(std::move(options)),
      highest_priority_(
          -static_cast<int>(std::max<uint32_t>(1, device.info().stream_priority_levels) - 1)),
      epoll_fd_(epoll_fd),
      wake_fd_(wake_fd),
      recent_compute_ns_(kRecentWindowNs),
      fair_(options_.fair),
      dma_fair_(options_.fair) {
  record_buffer_.resize(NEURON_RTD_MAX_RECORD_BYTES);
  worker_ = std::thread([this] { WorkerLoop(); });
  dma_ = std::thread([this] { DmaLoop(); });
}

CoreQueue::~CoreQueue() {
  Stop();
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

void CoreQueue::Stop() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
    generation_.fetch_add(1, std::memory_order_release);
    dma_ready_.SignalAll();
  }
  Wake();
  if (worker_.joinable()) worker_.join();
  if (dma_.joinable()) dma_.join();
}

absl::Status CoreQueue::Attach(std::shared_ptr<Stream> stream) {
  epoll_event event{.events = EPOLLIN, .data = {.fd = stream->doorbell_fd()}};
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stream->doorbell_fd(), &event) != 0) {
    return absl::ErrnoToStatus(
        errno, absl::StrFormat("core %d: watching stream %d's doorbell", core_, stream->id()));
  }
  {
    absl::MutexLock lock(&mutex_);
    auto group = std::find_if(sessions_.begin(), sessions_.end(), [&](const auto& candidate) {
      return candidate.session_id == stream->session_id();
    });
    if (group == sessions_.end()) {
      sessions_.push_back(SessionStreams{.session_id = stream->session_id(), .streams = {}});
      group = std::prev(sessions_.end());
    }
    group->streams.push_back(std::move(stream));
    generation_.fetch_add(1, std::memory_order_release);
  }
  Wake();
  return absl::OkStatus();
}

void CoreQueue::Detach(Stream& stream) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, stream.doorbell_fd(), nullptr);
  // A stream that leaves while stopped at a WAIT no longer waits: a stale
  // count would make every later completion wake this queue.
  if (stream.waiting.exchange(false)) waiting_streams_.fetch_sub(1, std::memory_order_seq_cst);
  absl::MutexLock lock(&mutex_);
  for (SessionStreams& group : sessions_) {
    std::erase_if(group.streams, [&](const auto& attached) { return attached.get() == &stream; });
  }
  std::erase_if(sessions_, [](const SessionStreams& group) { return group.streams.empty(); });
  generation_.fetch_add(1, std::memory_order_release);
  // The worker may be asleep holding its copy of the list, and with it the
  // stream (its ring, doorbell and completion page): it lets go once woken.
  Wake();
}

void CoreQueue::Wake() {
  const uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof(one)) < 0 && errno != EAGAIN) {
    spdlog::error("core {}: cannot wake the queue: {}", core_, std::strerror(errno));
  }
}

void CoreQueue::WakeIfWaiting() {
  if (waiting_streams_.load(std::memory_order_seq_cst) > 0) Wake();
}

void CoreQueue::WorkerLoop() {
  std::vector<Contender> contenders;
  std::vector<size_t> groups;
  std::vector<SessionStreams> sessions;
  uint64_t seen_generation = 0;
  bool first = true;
  while (true) {
    // The list is copied only when it changed (Attach, Detach and Stop bump
    // the generation and wake the worker).
    if (const uint64_t generation = generation_.load(std::memory_order_acquire);
        first || generation != seen_generation) {
      absl::MutexLock lock(&mutex_);
      if (stopping_) return;
      sessions = sessions_;
      seen_generation = generation;
      first = false;
      ForgetDeparted(sessions);
    }
    Tidy(sessions);
    FindContenders(sessions, /*running=*/0, contenders, groups);
    if (!contenders.empty()) {
      RunTurn(sessions, groups[fair_.Pick(contenders)]);
      continue;
    }
    const auto spin_until = std::chrono::steady_clock::now() + kIdleSpin;
    bool work = false;
    while (!work && std::chrono::steady_clock::now() < spin_until) work = HasRunnableWork(sessions);
    if (!work) Sleep(sessions);
  }
}

bool CoreQueue::HasRunnableWork(const std::vector<SessionStreams>& sessions) const {
  for (const SessionStreams& group : sessions) {
    for (const auto& stream : group.streams) {
      if (stream->in_flight.load(std::memory_order_acquire)) continue;
      if (stream->waiting.load(std::memory_order_acquire)) continue;
      if (stream->framing_lost.load(std::memory_order_acquire)) continue;
      if (stream->LoadTail() != stream->head()) return true;
    }
  }
  return false;
}

void CoreQueue::Sleep(const std::vector<SessionStreams>& sessions) {
  auto set_sleeping = [&](bool sleeping) {
    for (const SessionStreams& group : sessions) {
      for (const auto& stream : group.streams) stream->SetConsumerSleeping(sleeping);
    }
  };
  set_sleeping(true);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!HasRunnableWork(sessions)) {
    epoll_event events[16];
    int ready;
    do {
      ready = ::epoll_wait(epoll_fd_, events, 16, -1);
    } while (ready < 0 && errno == EINTR);
    for (int i = 0; i < ready; ++i) DrainEventFd(events[i].data.fd);
  }
  set_sleeping(false);
}

int CoreQueue::Serve(const std::shared_ptr<Stream>& stream, int budget, int64_t deadline_ns) {
  if (stream->in_flight.load(std::memory_order_acquire)) return 0;
  if (stream->framing_lost.load(std::memory_order_acquire)) return 0;
  std::shared_ptr<ExecutionContext> context = stream->context();
  if (context == nullptr) return 0;
  const uint64_t capacity = stream->ring().size() - kRingHeaderBytes;
  const char* records = stream->ring().data() + kRingHeaderBytes;
  int served = 0;
  // A batch ends when a stream comes or goes: the newcomer may outrank it.
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  for (int turn = 0; turn < budget; ++turn) {
    if (turn > 0 && (generation_.load(std::memory_order_acquire) != generation ||
                     (deadline_ns != INT64_MAX && Now() >= deadline_ns))) {
      break;
    }
    const uint64_t head = stream->head();
    const uint64_t tail = stream->LoadTail();
    if (tail == head) break;
    const uint64_t available = tail - head;
    const uint64_t position = head % capacity;
    if (available > capacity || available < sizeof(neuron_rtd_record_header)) {
      FailStream(worker_counters_, *stream, context.get(), stream->last_sequence() + 1,
                 NEURON_RTD_STATUS_INVALID, 0, "",
                 absl::StrFormat("ring tail %d is not a record boundary after head %d", tail,
                                 head));
      // The framing is lost: nothing more of this ring can be trusted, and
      // the queue stops polling it (its tail may stay wrong forever).
      stream->framing_lost.store(true, std::memory_order_release);
      return served + 1;
    }
    // Copy out before decoding: the client may rewrite the ring at any time.
    neuron_rtd_record_header header;
    std::memcpy(&header, records + position, sizeof(header));
    if (absl::Status framing = CheckRecordFraming(header, available, capacity - position);
        !framing.ok()) {
      FailStream(worker_counters_, *stream, context.get(), stream->last_sequence() + 1,
                 NEURON_RTD_STATUS_INVALID, header.opcode, "", std::string(framing.message()));
      stream->Consume(available, 0);
      return served + 1;
    }
    std::memcpy(record_buffer_.data(), records + position, header.length);
    absl::StatusOr<DecodedRecord> record = DecodeRecord(
        std::span<const uint8_t>(record_buffer_.data(), header.length), stream->last_sequence());
    if (!record.ok()) {
      FailStream(worker_counters_, *stream, context.get(),
                 std::max(header.sequence, stream->last_sequence() + 1), NEURON_RTD_STATUS_INVALID,
                 header.opcode, "", std::string(record.status().message()));
      stream->Consume(header.length, 0);
      ++served;
      continue;
    }
    if (stream->failed() && record->header.opcode != NEURON_RTD_OP_PAD) {
      // A failed stream runs nothing more; its records are drained so that
      // the client never blocks on a full ring.
      if (record->header.opcode == NEURON_RTD_OP_COLLECTIVE) AbandonCollective(*context, *record);
      worker_counters_.CountCommand(record->header.opcode, CommandOutcome::kAbandoned);
      stream->Consume(header.length, record->header.sequence);
      ++served;
      continue;
    }
    const int64_t started = Now();
    if ((record->header.flags & NEURON_RTD_RECORD_FLAG_PROFILE) != 0 &&
        record->header.opcode != NEURON_RTD_OP_PAD && stream->profile_started_ns == 0) {
      stream->profile_started_ns = started;
    }
    const Outcome outcome = Execute(stream, *context, *std::move(record));
    if (outcome == Outcome::kBlocked) break;
    if (outcome == Outcome::kDone || outcome == Outcome::kCopied) {
      const int64_t finished = Now();
      const auto took = static_cast<uint64_t>(std::max<int64_t>(0, finished - started));
      Account(outcome == Outcome::kCopied ? CoreEngine::kDma : CoreEngine::kCompute, took);
      // Utilization is the compute engine's: transfers are not counted.
      if (outcome == Outcome::kDone) AccountRecentCompute(finished, took);
    }
    ++served;
    if (outcome == Outcome::kDispatched) break;
  }
  return served;
}

CoreQueue::Outcome CoreQueue::Execute(const std::shared_ptr<Stream>& stream,
                                      ExecutionContext& context, DecodedRecord record) {
  const neuron_rtd_record_header& header = record.header;
  switch (header.opcode) {
    case NEURON_RTD_OP_PAD:
      stream->Consume(header.length, 0);
      return Outcome::kDone;
    case NEURON_RTD_OP_SIGNAL:
    case NEURON_RTD_OP_MARKER:
      stream->Consume(header.length, header.sequence);
      Finish(*stream, context, record, absl::OkStatus());
      return Outcome::kDone;
    case NEURON_RTD_OP_WAIT: {
      const auto& wait = std::get<neuron_rtd_wait_payload>(record.command);
      std::shared_ptr<Stream> target = context.FindStream(wait.stream_id);
      if (target == nullptr) {
        // A destroyed stream ran what it was given; its events stay answered.
        const std::optional<RetiredTimeline> retired =
            context.FindRetiredTimeline(wait.stream_id);
        absl::Status status;
        if (!retired) {
          status = absl::InvalidArgumentError(absl::StrFormat(
              "WAIT names stream %d, which this session does not have", wait.stream_id));
        } else if (retired->completed < wait.value) {
          status = retired->failed
                       ? absl::AbortedError(
                             absl::StrFormat("stream %d, waited on until %d, failed: %s",
                                             wait.stream_id, wait.value, retired->failure))
                       : absl::InvalidArgumentError(absl::StrFormat(
                             "stream %d was destroyed at %d, before reaching %d",
                             wait.stream_id, retired->completed, wait.value));
        }
        stream->Consume(header.length, header.sequence);
        Finish(*stream, context, record, status);
        return Outcome::kDone;
      }
      // Announce the wait before checking it, so that a completion racing
      // with this check always sees waiting_streams_ and wakes the worker.
      if (!stream->waiting.exchange(true)) waiting_streams_.fetch_add(1, std::memory_order_seq_cst);
      const bool target_failed = target->failed();
      if (target->completed() < wait.value && !target_failed) return Outcome::kBlocked;
      if (stream->waiting.exchange(false)) waiting_streams_.fetch_sub(1, std::memory_order_seq_cst);
      stream->Consume(header.length, header.sequence);
      Finish(*stream, context, record,
             target_failed && target->completed() < wait.value
                 ? absl::AbortedError(absl::StrFormat("stream %d, waited on until %d, failed: %s",
                                                      wait.stream_id, wait.value,
                                                      target->failure()))
                 : absl::OkStatus());
      return Outcome::kDone;
    }
    case NEURON_RTD_OP_FILL: {
      const auto& fill = std::get<neuron_rtd_fill_payload>(record.command);
      if (fill.bytes > kDmaChunkBytes) {
        std::shared_ptr<ExecutionContext> owner = stream->context();
        absl::Status status = owner ? StartFill(stream, owner, record)
                                    : absl::AbortedError("session closed");
        if (status.ok()) return Outcome::kDispatched;
        stream->Consume(header.length, header.sequence);
        Finish(*stream, context, record, status);
        return Outcome::kDone;
      }
      stream->Consume(header.length, header.sequence);
      absl::StatusOr<DeviceSpan> span = context.ResolveDevice(fill.device_address, fill.bytes);
      absl::Status status = span.ok() ? span->device->Fill(fill.device_address, fill.bytes,
                                                           fill.pattern, fill.pattern_bytes)
                                      : span.status();
      Finish(*stream, context, record, status);
      return Outcome::kDone;
    }
    case NEURON_RTD_OP_LAUNCH: {
      stream->Consume(header.length, header.sequence);
      const hal::Executable* launched = nullptr;
      const absl::Status status =
          Launch(context, std::get<LaunchCommand>(record.command), &launched);
      Finish(*stream, context, record, status, launched);
      return Outcome::kDone;
    }
    case NEURON_RTD_OP_COPY: {
      std::shared_ptr<ExecutionContext> owner = stream->context();
      absl::StatusOr<DmaJob> job = owner ? PrepareCopy(stream, owner, record)
                                         : absl::AbortedError("session closed");
      if (!job.ok()) {
        stream->Consume(header.length, header.sequence);
        Finish(*stream, context, record, job.status());
        return Outcome::kDone;
      }
      if (job->bytes <= kInlineCopyBytes) {
        stream->Consume(header.length, header.sequence);
        Finish(*stream, context, record, job->run(0, job->bytes));
        return Outcome::kCopied;
      }
      EnqueueDma(*std::move(job));
      return Outcome::kDispatched;
    }
    case NEURON_RTD_OP_COLLECTIVE:
      return ExecuteCollective(stream, context, record);
    default:
      stream->Consume(header.length, header.sequence);
      Finish(*stream, context, record,
             absl::UnimplementedError(absl::StrFormat("%s commands are not implemented yet",
                                                      OpcodeName(header.opcode))));
      return Outcome::kDone;
  }
}

void CoreQueue::Account(CoreEngine engine, uint64_t ns) {
  worker_counters_.AddBusy(engine, ns);
  worker_counters_.RecordExecution(ns);
}

void CoreQueue::AccountRecentCompute(int64_t now, uint64_t ns) {
  unfolded_compute_ns_ += ns;
  if (now - last_fold_ns_ < kRecentFoldNs) return;
  absl::MutexLock lock(&recent_mutex_);
  recent_compute_ns_.Add(now, static_cast<double>(unfolded_compute_ns_));
  unfolded_compute_ns_ = 0;
  last_fold_ns_ = now;
}

CoreQueue::Stats CoreQueue::stats() const {
  Stats stats;
  {
    absl::MutexLock lock(&recent_mutex_);
    stats.recent_compute_utilization = std::min(
        1.0, recent_compute_ns_.ValueAt(Now()) / recent_compute_ns_.window_ns());
  }
  stats.counters = worker_counters_.snapshot();
  stats.counters.Add(dma_counters_.snapshot());
  absl::MutexLock lock(&mutex_);
  for (const SessionStreams& session : sessions_) {
    for (const std::shared_ptr<Stream>& stream : session.streams) {
      stats.queued_commands += stream->QueuedCommands();
    }
  }
  return stats;
}

absl::Status CoreQueue::Launch(ExecutionContext& context, const LaunchCommand& launch,
                               const hal::Executable** launched) {
  // Every device buffer the kernel touches, held until it has finished.
  std::vector<memory::SegmentRef> held;
  auto check = [&](uint64_t address, uint64_t length) -> absl::Status {
    absl::StatusOr<DeviceSpan> span = context.ResolveDevice(address, length);
    if (!span.ok()) return span.status();
    if (span->device != &device_) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "argument 0x%x lives on device %d; core %d is on device %d", address,
          span->device->info().index, core_, device_.info().index));
    }
    held.push_back(std::move(span->segment));
    return absl::OkStatus();
  };
  if (launch.executable_id == NEURON_RTD_EXEC_BUILTIN_ADD_F32) {
    absl::StatusOr<uint64_t> count = hal::BuiltinAddF32Count(launch.arguments, launch.scalars);
    if (!count.ok()) return count.status();
    for (uint64_t address : launch.arguments) {
      if (absl::Status status = check(address, *count * sizeof(float)); !status.ok()) return status;
    }
    return device_.RunAddF32(launch.arguments, launch.scalars);
  }
  std::shared_ptr<const exec::Executable> executable =
      context.FindExecutable(launch.executable_id);
  if (executable == nullptr) {
    return absl::NotFoundError(absl::StrFormat(
        "executable %d is not loaded in this session", launch.executable_id));
  }
  if (launch.arguments.size() < executable->address_count) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "executable %d (%s) takes %d addresses; the launch gave %d", executable->id,
        executable->description, executable->address_count, launch.arguments.size()));
  }
  for (const hal::TensorLayout& layout : executable->launch_tensors) {
    const uint64_t extent = hal::TensorExtentBytes(layout);
    if (extent == 0) continue;
    if (absl::Status status = check(launch.arguments[layout.address_index], extent);
        !status.ok()) {
      return status;
    }
  }
  *launched = executable->prepared.get();
  return device_.Dispatch(*executable->prepared, core_ - device_.info().first_core_index,
                          launch.arguments, launch.scalars);
}

void CoreQueue::ReportProfiled(Stream& stream, ExecutionContext& context,
                               const DecodedRecord& record, bool failed,
                               const hal::Executable* launched) {
  const int64_t now = Now();
  const int64_t started = stream.profile_started_ns != 0 ? stream.profile_started_ns : now;
  stream.profile_started_ns = 0;
  uint64_t bytes = 0;
  if (const auto* copy = std::get_if<neuron_rtd_copy_payload>(&record.command)) {
    bytes = copy->bytes;
  } else if (const auto* fill = std::get_if<neuron_rtd_fill_payload>(&record.command)) {
    bytes = fill->bytes;
  } else if (const auto* group = std::get_if<CollectiveCommand>(&record.command)) {
    // Counts are bounded by the decoder (2^46 bytes each, 512 operations).
    for (const neuron_rtd_collective_op& op : group->ops) {
      bytes += op.element_count * neuron_rtd_dtype_bytes(op.dtype);
    }
  }
  context.OnProfiledCommand(ProfiledCommand{
      .correlation_id = record.header.correlation_id,
      .stream_id = stream.id(),
      .sequence = record.header.sequence,
      .core = core_,
      .opcode = record.header.opcode,
      .engine = device_.EngineOf(CommandKindOf(record.header.opcode), record.op_name, launched),
      .failed = failed,
      .start_ns = started,
      .end_ns = now,
      .bytes = bytes,
      .op_name = record.op_name});
}

void CoreQueue::Settle(CoreCounters& counters, Stream& stream, ExecutionContext& context,
                       const DecodedRecord& record, const absl::Status& status,
                       const hal::Executable* launched) {
  if ((record.header.flags & NEURON_RTD_RECORD_FLAG_PROFILE) != 0) {
    ReportProfiled(stream, context, record, !status.ok(), launched);
  }
  if (status.ok()) {
    counters.CountCommand(record.header.opcode, CommandOutcome::kCompleted);
    stream.Complete(record.header.sequence);
    context.OnCommandDone(stream, /*failed=*/false);
    return;
  }
  if (const auto type = status.GetPayload(hal::kOperatorErrorTypePayload); type.has_value()) {
    // The operator refused its arguments and device memory is intact: the
    // command fails, the stream goes on (as an argument error on CUDA
    // raises at its call and leaves the context usable).
    context.OnStreamError(StreamError{.stream_id = stream.id(),
                                      .sequence = record.header.sequence,
                                      .nrt_status = rtd::NrtStatusFor(status.code()),
                                      .opcode = record.header.opcode,
                                      .op_name = record.op_name,
                                      .message = std::string(status.message()),
                                      .error_type = std::string(*type),
                                      .sticky = false});
    counters.CountCommand(record.header.opcode, CommandOutcome::kRejected);
    stream.CompleteWithOperatorError(record.header.sequence);
    context.OnCommandDone(stream, /*failed=*/true);
    return;
  }
  FailStream(counters, stream, &context, record.header.sequence, rtd::NrtStatusFor(status.code()),
             record.header.opcode, record.op_name, std::string(status.message()),
             status.code() == absl::StatusCode::kDeadlineExceeded ? CommandOutcome::kTimedOut
                                                                  : CommandOutcome::kFailed);
}

void CoreQueue::FailStream(CoreCounters& counters, Stream& stream, ExecutionContext* context,
                           uint64_t sequence, int32_t nrt_status, uint16_t opcode,
                           const std::string& op_name, const std::string& message,
                           CommandOutcome outcome) {
  // The details are recorded before the failure is published: a client that
  // sees the failure asks for them at once.
  if (context != nullptr && !stream.failed()) {
    context->OnStreamError(StreamError{.stream_id = stream.id(),
                                       .sequence = sequence,
                                       .nrt_status = nrt_status,
                                       .opcode = opcode,
                                       .op_name = op_name,
                                       .message = message});
  }
  stream.Fail(sequence, nrt_status,
              op_name.empty()
                  ? absl::StrFormat("command %d (%s) failed: %s", sequence, OpcodeName(opcode),
                                    message)
                  : absl::StrFormat("command %d (%s '%s') failed: %s", sequence,
                                    OpcodeName(opcode), op_name, message));
  counters.CountCommand(opcode, outcome);
  if (context != nullptr) context->OnCommandDone(stream, /*failed=*/true);
}

}  // namespace neuron::rtd::queue

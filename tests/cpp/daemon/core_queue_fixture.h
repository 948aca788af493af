// The fixture of the core queue's tests: a sim device, fake sessions that
// log their completions (and can hold the worker inside the first one), and
// rings written by hand. Test-only.
#ifndef NEURON_TESTS_CPP_DAEMON_CORE_QUEUE_FIXTURE_H_
#define NEURON_TESTS_CPP_DAEMON_CORE_QUEUE_FIXTURE_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/hal/backend_factory.h"
#include "daemon/memory/memory_manager.h"
#include "daemon/memory/shared_region.h"
#include "daemon/queue/core_queue.h"
#include "daemon/queue/stream.h"
#include "neuron/rtd/abi/command_ring.h"
#include "neuron/rtd/abi/data_plane.h"

namespace neuron::rtd::queue {


// Completions of every session, in the order the queue reported them.
struct CompletionLog {
  absl::Mutex mutex;
  std::vector<uint64_t> streams ABSL_GUARDED_BY(mutex);
  // Holds the worker inside its first completion until released.
  absl::Notification held;
  absl::Notification released;
  std::atomic<bool> first{true};
  // The completion (counted from 1) that holds the worker; the first unless
  // a test says otherwise before anything runs.
  int hold_at = 1;
  int seen = 0;  // worker only
  // With a fake clock: each completion of stream id advances it by
  // cost_ns[id] (1 us when absent), as if the command had taken that long.
  std::atomic<int64_t>* clock = nullptr;
  std::map<uint64_t, int64_t> cost_ns;  // set before the streams attach
};

// A session as the queue sees it: device memory it owns and its streams.
class FakeSession final : public ExecutionContext {
 public:
  FakeSession(uint64_t id, CompletionLog& log, std::vector<memory::SegmentRef> segments,
              hal::Device& device)
      : id_(id), log_(log), segments_(std::move(segments)), device_(device) {}

  uint64_t session_id() const override { return id_; }
  uint32_t share_weight() const override { return weight.load(); }
  void AddDeviceTime(uint64_t ns) override { device_time_ns += ns; }
  std::atomic<uint32_t> weight{1};
  std::atomic<uint64_t> device_time_ns{0};
  absl::StatusOr<DeviceSpan> ResolveDevice(uint64_t address, uint64_t length) override {
    for (const memory::SegmentRef& segment : segments_) {
      if (address >= segment->range().address && address + length <= segment->range().end()) {
        return DeviceSpan{.segment = segment, .device = &device_, .address = address};
      }
    }
    return absl::InvalidArgumentError("not this session's memory");
  }
  absl::StatusOr<HostSpan> ResolveStaging(uint64_t, uint64_t) override {
    return absl::UnimplementedError("no staging");
  }
  absl::StatusOr<HostSpan> ResolveHostMemory(uint64_t, uint64_t, uint64_t) override {
    return absl::UnimplementedError("no host memory");
  }
  uint64_t address() const { return segments_.front()->range().address; }
  // Streams a WAIT may name; held weakly, as the session holds destroyed ones.
  void Add(const std::shared_ptr<Stream>& stream) {
    absl::MutexLock lock(&mutex_);
    streams_[stream->id()] = stream;
  }
  std::shared_ptr<Stream> FindStream(uint64_t stream_id) override {
    absl::MutexLock lock(&mutex_);
    auto it = streams_.find(stream_id);
    return it == streams_.end() ? nullptr : it->second.lock();
  }
  void OnStreamRetired(uint64_t stream_id, const RetiredTimeline& timeline) override {
    absl::MutexLock lock(&mutex_);
    retired_[stream_id] = timeline;
  }
  std::optional<RetiredTimeline> FindRetiredTimeline(uint64_t stream_id) override {
    absl::MutexLock lock(&mutex_);
    auto it = retired_.find(stream_id);
    if (it == retired_.end()) return std::nullopt;
    return it->second;
  }
  // Faults are recorded instead of failing the test.
  std::atomic<bool> errors_expected{false};
  std::vector<std::string> errors() {
    absl::MutexLock lock(&mutex_);
    return errors_;
  }
  std::shared_ptr<const exec::Executable> FindExecutable(uint64_t) override { return nullptr; }
  absl::StatusOr<CommunicatorMembership> FindCommunicator(uint64_t) override {
    return absl::NotFoundError("the fake session joins no communicator");
  }
  void OnCommandDone(const Stream& stream, bool failed) override {
    EXPECT_TRUE(!failed || errors_expected) << "stream " << stream.id();
    if (log_.clock != nullptr) {
      auto cost = log_.cost_ns.find(stream.id());
      log_.clock->fetch_add(cost == log_.cost_ns.end() ? 1000 : cost->second);
    }
    {
      absl::MutexLock lock(&log_.mutex);
      log_.streams.push_back(stream.id());
    }
    if (++log_.seen == log_.hold_at && log_.first.exchange(false)) {
      log_.held.Notify();
      log_.released.WaitForNotification();
    }
  }
  void OnProfiledCommand(ProfiledCommand command) override {
    absl::MutexLock lock(&mutex_);
    profiled_.push_back(std::move(command));
  }
  std::vector<ProfiledCommand> profiled() {
    absl::MutexLock lock(&mutex_);
    return profiled_;
  }
  void OnStreamError(const StreamError& error) override {
    if (!errors_expected) ADD_FAILURE() << "stream " << error.stream_id << ": " << error.message;
    absl::MutexLock lock(&mutex_);
    errors_.push_back(error.message);
  }

 private:
  const uint64_t id_;
  CompletionLog& log_;
  absl::Mutex mutex_;
  std::map<uint64_t, std::weak_ptr<Stream>> streams_ ABSL_GUARDED_BY(mutex_);
  std::vector<ProfiledCommand> profiled_ ABSL_GUARDED_BY(mutex_);
  std::map<uint64_t, RetiredTimeline> retired_ ABSL_GUARDED_BY(mutex_);
  std::vector<std::string> errors_ ABSL_GUARDED_BY(mutex_);
  const std::vector<memory::SegmentRef> segments_;
  hal::Device& device_;
};

class CoreQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = hal::CreateBackend(
        hal::BackendOptions{.kind = "sim", .logical_nc_config = 0, .sim_preset = "dev"},
        DefaultOsSysCalls());
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = *std::move(backend);
    memory_ = std::make_unique<memory::MemoryManager>(*backend_);
    auto queue = CoreQueue::Create(0, *backend_->devices()[0]);
    ASSERT_TRUE(queue.ok()) << queue.status();
    queue_ = *std::move(queue);
  }

  void TearDown() override {
    if (!log_.released.HasBeenNotified()) log_.released.Notify();
    queue_.reset();
  }

  // Replaces the queue with one whose device time is the fake clock that
  // completions advance (CompletionLog::cost_ns), and no anticipation. With
  // an anticipation window, every reading of the clock also advances it by
  // 1 ns, so that the worker's waits end.
  void UseFakeClock(std::chrono::nanoseconds anticipation = std::chrono::nanoseconds(0)) {
    queue_.reset();
    log_.clock = &fake_clock_;
    const bool ticking = anticipation.count() > 0;
    auto clock = [this, ticking] {
      return ticking ? fake_clock_.fetch_add(1) + 1 : fake_clock_.load();
    };
    auto queue = CoreQueue::Create(0, *backend_->devices()[0],
                                   CoreQueueOptions{.fair = FairQueueOptions{},
                                                    .anticipation = anticipation,
                                                    .clock = clock,
                                                    .thread_cpu_clock = clock});
    ASSERT_TRUE(queue.ok()) << queue.status();
    queue_ = *std::move(queue);
  }

  // The runs of consecutive completions: (stream, how many in a row).
  std::vector<std::pair<uint64_t, int>> Runs() {
    std::vector<std::pair<uint64_t, int>> runs;
    for (uint64_t stream : Completions()) {
      if (!runs.empty() && runs.back().first == stream) {
        ++runs.back().second;
      } else {
        runs.emplace_back(stream, 1);
      }
    }
    return runs;
  }

  std::shared_ptr<FakeSession> MakeSession(uint64_t id, uint64_t hbm_bytes = 0) {
    std::vector<memory::SegmentRef> segments;
    if (hbm_bytes > 0) segments.push_back(*memory_->Allocate(0, 0, hbm_bytes));
    auto session = std::make_shared<FakeSession>(id, log_, std::move(segments),
                                                 *backend_->devices()[0]);
    sessions_.push_back(session);
    return session;
  }

  // A stream of `session` with an 8 KiB ring; records are written before it
  // is attached.
  std::shared_ptr<Stream> MakeStream(const std::shared_ptr<FakeSession>& session,
                                     int priority = 0) {
    const uint64_t id = next_stream_id_++;
    auto ring = memory::SharedRegion::Create(id, NEURON_RTD_REGION_COMMAND_RING,
                                             kRingHeaderBytes + 8192,
                                             absl::StrFormat("core-queue-test-%d", id));
    EXPECT_TRUE(ring.ok()) << ring.status();
    InitializeRing(**ring, id);
    auto slot = std::make_shared<neuron_rtd_completion_slot>();
    auto stream = std::make_shared<Stream>(id, session->session_id(), 0, *std::move(ring),
                                           ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), slot.get(),
                                           slot, session, priority);
    sequences_[id] = 0;
    return stream;
  }

  // With `profile_correlation`, the record carries the PROFILE flag and it.
  void Append(Stream& stream, uint16_t opcode, const void* payload = nullptr,
              uint32_t payload_bytes = 0, std::optional<uint64_t> profile_correlation = {}) {
    auto* header = reinterpret_cast<neuron_rtd_ring_header*>(stream.ring().data());
    char* records = stream.ring().data() + kRingHeaderBytes;
    const uint64_t tail = std::atomic_ref<uint64_t>(header->tail).load();
    const uint32_t length = neuron_rtd_encode_record(
        records + tail % header->capacity_bytes, opcode, ++sequences_[stream.id()], payload,
        payload_bytes, nullptr, 0);
    ASSERT_GT(length, 0u);
    ASSERT_LE(tail + length, header->capacity_bytes) << "the test's rings never wrap";
    if (profile_correlation) {
      neuron_rtd_mark_record_profiled(records + tail % header->capacity_bytes,
                                      *profile_correlation);
    }
    std::atomic_ref<uint64_t>(header->tail).store(tail + length, std::memory_order_release);
  }

  void AppendFill(Stream& stream, uint64_t address, uint64_t bytes,
                  std::optional<uint64_t> profile_correlation = {}) {
    const neuron_rtd_fill_payload fill{
        .device_address = address, .bytes = bytes, .pattern = 0x5a, .pattern_bytes = 1,
        .reserved0 = 0};
    Append(stream, NEURON_RTD_OP_FILL, &fill, sizeof(fill), profile_correlation);
  }

  std::vector<uint64_t> Completions() {
    absl::MutexLock lock(&log_.mutex);
    return log_.streams;
  }

  // Waits until `count` commands have completed.
  void AwaitCompletions(size_t count) {
    auto done = [&] { return log_.streams.size() >= count; };
    absl::MutexLock lock(&log_.mutex);
    ASSERT_TRUE(log_.mutex.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(60)))
        << log_.streams.size() << " of " << count << " completed";
  }

  std::atomic<int64_t> fake_clock_{1};
  CompletionLog log_;
  std::unique_ptr<hal::Backend> backend_;
  std::unique_ptr<memory::MemoryManager> memory_;
  std::vector<std::shared_ptr<FakeSession>> sessions_;
  std::map<uint64_t, uint64_t> sequences_;
  uint64_t next_stream_id_ = 1;
  std::unique_ptr<CoreQueue> queue_;
};

}  // namespace neuron::rtd::queue

#endif  // NEURON_TESTS_CPP_DAEMON_CORE_QUEUE_FIXTURE_H_

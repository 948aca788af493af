// The order in which a core's queue serves its streams: sessions share the
// core by device time (measured on a fake clock here) however many streams
// each has, weighted, priorities within and across them, and a large
// transfer yields the DMA engine between chunks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
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
namespace {

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
  // completions advance (CompletionLog::cost_ns), and no anticipation.
  void UseFakeClock() {
    queue_.reset();
    log_.clock = &fake_clock_;
    auto queue = CoreQueue::Create(0, *backend_->devices()[0],
                                   CoreQueueOptions{.fair = FairQueueOptions{},
                                                    .anticipation = std::chrono::nanoseconds(0),
                                                    .clock = [this] { return fake_clock_.load(); }});
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
    if (hbm_bytes > 0) segments.push_back(*memory_->Allocate(0, hbm_bytes));
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

  void Append(Stream& stream, uint16_t opcode, const void* payload = nullptr,
              uint32_t payload_bytes = 0) {
    auto* header = reinterpret_cast<neuron_rtd_ring_header*>(stream.ring().data());
    char* records = stream.ring().data() + kRingHeaderBytes;
    const uint64_t tail = std::atomic_ref<uint64_t>(header->tail).load();
    const uint32_t length = neuron_rtd_encode_record(
        records + tail % header->capacity_bytes, opcode, ++sequences_[stream.id()], payload,
        payload_bytes, nullptr, 0);
    ASSERT_GT(length, 0u);
    ASSERT_LE(tail + length, header->capacity_bytes) << "the test's rings never wrap";
    std::atomic_ref<uint64_t>(header->tail).store(tail + length, std::memory_order_release);
  }

  void AppendFill(Stream& stream, uint64_t address, uint64_t bytes) {
    const neuron_rtd_fill_payload fill{
        .device_address = address, .bytes = bytes, .pattern = 0x5a, .pattern_bytes = 1,
        .reserved0 = 0};
    Append(stream, NEURON_RTD_OP_FILL, &fill, sizeof(fill));
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

TEST_F(CoreQueueTest, ASessionWithManyStreamsGetsOneSessionsShare) {
  UseFakeClock();
  constexpr int kStreamsOfA = 64;
  constexpr int kRecordsPerStreamOfA = 8;
  constexpr int kRecordsOfB = 256;
  auto a = MakeSession(1);
  auto b = MakeSession(2);
  std::shared_ptr<Stream> b_stream = MakeStream(b);
  for (int i = 0; i < kRecordsOfB; ++i) Append(*b_stream, NEURON_RTD_OP_SIGNAL);
  log_.cost_ns[b_stream->id()] = 1'000'000;
  std::vector<std::shared_ptr<Stream>> a_streams;
  for (int i = 0; i < kStreamsOfA; ++i) {
    a_streams.push_back(MakeStream(a));
    for (int j = 0; j < kRecordsPerStreamOfA; ++j) Append(*a_streams.back(), NEURON_RTD_OP_SIGNAL);
    log_.cost_ns[a_streams.back()->id()] = 1'000'000;
  }
  // B first: its first completion holds the worker until every stream of A
  // is attached, so that every later turn sees all of them.
  ASSERT_TRUE(queue_->Attach(b_stream).ok());
  log_.held.WaitForNotification();
  for (const auto& stream : a_streams) ASSERT_TRUE(queue_->Attach(stream).ok());
  log_.released.Notify();
  AwaitCompletions(kRecordsOfB + kStreamsOfA * kRecordsPerStreamOfA);

  // While both had work (B's 256 commands), they had the core half and
  // half, though A has 64 streams (it had 64 times B's share when each
  // stream took turns of its own).
  const std::vector<uint64_t> order = Completions();
  const auto of_b = std::count(order.begin(), order.begin() + kRecordsOfB, b_stream->id());
  EXPECT_NEAR(static_cast<double>(of_b), kRecordsOfB / 2.0, 4);
  // A's streams share its turns: its first 64 completions are of 64
  // different streams.
  std::vector<uint64_t> first_of_a;
  for (uint64_t stream : order) {
    if (stream != b_stream->id() && first_of_a.size() < kStreamsOfA) first_of_a.push_back(stream);
  }
  std::sort(first_of_a.begin(), first_of_a.end());
  EXPECT_EQ(std::unique(first_of_a.begin(), first_of_a.end()) - first_of_a.begin(), kStreamsOfA);
  for (const auto& stream : a_streams) EXPECT_EQ(stream->completed(), kRecordsPerStreamOfA);
}

TEST_F(CoreQueueTest, ALargeFillYieldsTheDmaEngineBetweenChunks) {
  constexpr uint64_t kLarge = 512ull << 20;  // 64 chunks
  constexpr uint64_t kSmall = 16ull << 20;   // 2 chunks
  constexpr int kSmallFills = 4;
  auto a = MakeSession(1, kLarge);
  auto b = MakeSession(2, kSmall);
  std::shared_ptr<Stream> a_stream = MakeStream(a);
  std::shared_ptr<Stream> b_stream = MakeStream(b);
  // A's first command holds the worker until B's stream is attached too.
  Append(*a_stream, NEURON_RTD_OP_SIGNAL);
  AppendFill(*a_stream, a->address(), kLarge);
  for (int i = 0; i < kSmallFills; ++i) AppendFill(*b_stream, b->address(), kSmall);
  ASSERT_TRUE(queue_->Attach(a_stream).ok());
  log_.held.WaitForNotification();
  ASSERT_TRUE(queue_->Attach(b_stream).ok());
  log_.released.Notify();
  AwaitCompletions(1 + 1 + kSmallFills);

  // A's fill started first, and B's fills, issued one after the other, all
  // finished before it: neither the worker nor the DMA engine was held by
  // A's fill for its whole length.
  const std::vector<uint64_t> order = Completions();
  EXPECT_EQ(order.back(), a_stream->id());
  EXPECT_EQ(a_stream->completed(), 2u);
  EXPECT_EQ(b_stream->completed(), kSmallFills);
  // Each chunk went on with the pattern where the last stopped.
  for (uint64_t offset : {uint64_t{0}, uint64_t{(8ull << 20) - 1}, uint64_t{8ull << 20}, kLarge - 1}) {
    uint8_t byte = 0;
    ASSERT_TRUE(backend_->devices()[0]->CopyDeviceToHost(&byte, a->address() + offset, 1).ok());
    EXPECT_EQ(byte, 0x5a) << "at " << offset;
  }
}

TEST_F(CoreQueueTest, ADetachedStreamIsLetGoEvenWhileTheQueueSleeps) {
  auto session = MakeSession(1);
  std::shared_ptr<Stream> stream = MakeStream(session);
  ASSERT_TRUE(queue_->Attach(stream).ok());
  // The idle worker goes to sleep holding its list of streams; it says so
  // in the ring.
  auto* header = reinterpret_cast<neuron_rtd_ring_header*>(stream->ring().data());
  auto asleep = [&] {
    return std::atomic_ref<uint32_t>(header->consumer_sleeping).load() != 0;
  };
  for (const absl::Time until = absl::Now() + absl::Seconds(30); !asleep() && absl::Now() < until;) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_TRUE(asleep());
  queue_->Detach(*stream);
  std::weak_ptr<Stream> released = stream;
  stream.reset();
  // A stream kept would keep its ring, doorbell and completion page: a dead
  // client's file descriptors and shared memory, until some other command
  // woke the core.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!released.expired() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_TRUE(released.expired());
}

TEST_F(CoreQueueTest, AWaitOnADestroyedStreamThatWasLetGoIsStillAnswered) {
  auto session = MakeSession(1);
  log_.first = false;  // no gate
  std::shared_ptr<Stream> destroyed = MakeStream(session);
  session->Add(destroyed);
  Append(*destroyed, NEURON_RTD_OP_SIGNAL);
  destroyed->retiring.store(true);
  ASSERT_TRUE(queue_->Attach(destroyed).ok());
  AwaitCompletions(1);
  std::weak_ptr<Stream> released = destroyed;
  const uint64_t destroyed_id = destroyed->id();
  destroyed.reset();
  for (const absl::Time until = absl::Now() + absl::Seconds(30);
       !released.expired() && absl::Now() < until;) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_TRUE(released.expired());

  // Its event at 1 completed before it went: a WAIT on it passes (it once
  // failed with "WAIT names stream N, which this session does not have").
  std::shared_ptr<Stream> waiter = MakeStream(session);
  const neuron_rtd_wait_payload reached{.stream_id = destroyed_id, .value = 1};
  Append(*waiter, NEURON_RTD_OP_WAIT, &reached, sizeof(reached));
  ASSERT_TRUE(queue_->Attach(waiter).ok());
  AwaitCompletions(2);
  EXPECT_FALSE(waiter->failed());
  EXPECT_EQ(waiter->completed(), 1u);

  // One beyond what it ran can never come: an error that says so.
  session->errors_expected = true;
  std::shared_ptr<Stream> hopeless = MakeStream(session);
  const neuron_rtd_wait_payload beyond{.stream_id = destroyed_id, .value = 5};
  Append(*hopeless, NEURON_RTD_OP_WAIT, &beyond, sizeof(beyond));
  ASSERT_TRUE(queue_->Attach(hopeless).ok());
  AwaitCompletions(3);
  EXPECT_TRUE(hopeless->failed());
  ASSERT_EQ(session->errors().size(), 1u);
  EXPECT_THAT(session->errors()[0], ::testing::HasSubstr("was destroyed at 1, before reaching 5"));
}

}  // namespace
}  // namespace neuron::rtd::queue

namespace neuron::rtd::queue {
namespace {

constexpr int64_t kHogCommandNs = 18'000'000;  // a 1024x1024 product on the simulated core
constexpr int64_t kLightCommandNs = 10'000;

TEST_F(CoreQueueTest, ALightSessionsQueuedBatchRunsInOneTurnAmongHogs) {
  UseFakeClock();
  constexpr int kHogCommands = 12;
  constexpr int kLightCommands = 24;
  std::vector<std::shared_ptr<Stream>> hogs;
  for (uint64_t id = 1; id <= 3; ++id) {
    hogs.push_back(MakeStream(MakeSession(id)));
    for (int i = 0; i < kHogCommands; ++i) Append(*hogs.back(), NEURON_RTD_OP_SIGNAL);
    log_.cost_ns[hogs.back()->id()] = kHogCommandNs;
  }
  std::shared_ptr<Stream> light = MakeStream(MakeSession(4));
  for (int i = 0; i < kLightCommands; ++i) Append(*light, NEURON_RTD_OP_SIGNAL);
  log_.cost_ns[light->id()] = kLightCommandNs;
  ASSERT_TRUE(queue_->Attach(hogs[0]).ok());
  log_.held.WaitForNotification();
  for (size_t i = 1; i < hogs.size(); ++i) ASSERT_TRUE(queue_->Attach(hogs[i]).ok());
  ASSERT_TRUE(queue_->Attach(light).ok());
  log_.released.Notify();
  AwaitCompletions(3 * kHogCommands + kLightCommands);

  // The light session's whole batch ran back to back, after at most one
  // command of each hog (a round by record count ran a hog's turn of 32).
  const std::vector<std::pair<uint64_t, int>> runs = Runs();
  int hog_commands_before = 0;
  bool found = false;
  for (const auto& [stream, count] : runs) {
    if (stream == light->id()) {
      EXPECT_EQ(count, kLightCommands);
      found = true;
      break;
    }
    hog_commands_before += count;
  }
  EXPECT_TRUE(found);
  EXPECT_LE(hog_commands_before, 3);
  // And the hogs took turns one command at a time (18 ms > the quantum).
  for (const auto& [stream, count] : runs) {
    if (stream != light->id()) {
      EXPECT_EQ(count, 1) << "stream " << stream;
    }
  }
}

TEST_F(CoreQueueTest, WeightsShareDeviceTimeInProportion) {
  UseFakeClock();
  constexpr int kCommands = 120;
  std::vector<std::shared_ptr<Stream>> streams;
  std::vector<std::shared_ptr<FakeSession>> owners;
  for (uint64_t id = 1; id <= 3; ++id) {
    owners.push_back(MakeSession(id));
    owners.back()->weight = id == 1 ? 1 : id == 2 ? 2 : 4;
    streams.push_back(MakeStream(owners.back()));
    for (int i = 0; i < kCommands; ++i) Append(*streams.back(), NEURON_RTD_OP_SIGNAL);
    log_.cost_ns[streams.back()->id()] = 1'000'000;
  }
  ASSERT_TRUE(queue_->Attach(streams[0]).ok());
  log_.held.WaitForNotification();
  ASSERT_TRUE(queue_->Attach(streams[1]).ok());
  ASSERT_TRUE(queue_->Attach(streams[2]).ok());
  log_.released.Notify();
  AwaitCompletions(3 * kCommands);
  // Over the first 140 commands (while all three had work): 1:2:4.
  std::map<uint64_t, int> counts;
  const std::vector<uint64_t> order = Completions();
  for (size_t i = 0; i < 140; ++i) ++counts[order[i]];
  EXPECT_NEAR(counts[streams[0]->id()], 20, 4);
  EXPECT_NEAR(counts[streams[1]->id()], 40, 4);
  EXPECT_NEAR(counts[streams[2]->id()], 80, 4);
  EXPECT_EQ(owners[2]->device_time_ns.load(), uint64_t{kCommands} * 1'000'000);
}

TEST_F(CoreQueueTest, AHigherPriorityStreamRunsAtTheNextCommandBoundary) {
  UseFakeClock();
  auto session = MakeSession(1);
  std::shared_ptr<Stream> low = MakeStream(session, 0);
  std::shared_ptr<Stream> high = MakeStream(session, -1);
  for (int i = 0; i < 6; ++i) Append(*low, NEURON_RTD_OP_SIGNAL);
  for (int i = 0; i < 3; ++i) Append(*high, NEURON_RTD_OP_SIGNAL);
  log_.cost_ns[low->id()] = 1'000'000;
  log_.cost_ns[high->id()] = 1'000'000;
  ASSERT_TRUE(queue_->Attach(low).ok());
  log_.held.WaitForNotification();
  ASSERT_TRUE(queue_->Attach(high).ok());
  log_.released.Notify();
  AwaitCompletions(9);
  const std::vector<uint64_t> order = Completions();
  const std::vector<uint64_t> expected = {low->id(),  high->id(), high->id(),
                                          high->id(), low->id(),  low->id(),
                                          low->id(),  low->id(),  low->id()};
  EXPECT_EQ(order, expected);
}

TEST_F(CoreQueueTest, TheLowestPriorityIsNotStarved) {
  UseFakeClock();
  auto session = MakeSession(1);
  std::shared_ptr<Stream> high = MakeStream(session, -1);
  std::shared_ptr<Stream> low = MakeStream(session, 0);
  constexpr int kHigh = 60;
  constexpr int kLow = 5;
  for (int i = 0; i < kHigh; ++i) Append(*high, NEURON_RTD_OP_SIGNAL);
  for (int i = 0; i < kLow; ++i) Append(*low, NEURON_RTD_OP_SIGNAL);
  // 10 ms a command: the low stream's priority rises a level per 20 ms.
  log_.cost_ns[high->id()] = 10'000'000;
  log_.cost_ns[low->id()] = 10'000'000;
  ASSERT_TRUE(queue_->Attach(high).ok());
  log_.held.WaitForNotification();
  ASSERT_TRUE(queue_->Attach(low).ok());
  log_.released.Notify();
  AwaitCompletions(kHigh + kLow);
  // Every low command ran while the high stream still had work, a few high
  // commands apart.
  const std::vector<uint64_t> order = Completions();
  int high_since_low = 0;
  int low_seen = 0;
  for (uint64_t stream : order) {
    if (stream == low->id()) {
      EXPECT_LE(high_since_low, 3);
      high_since_low = 0;
      if (++low_seen == kLow) break;
    } else {
      ++high_since_low;
    }
  }
  EXPECT_EQ(low_seen, kLow);
  EXPECT_EQ(low->completed(), uint64_t{kLow});
}

TEST_F(CoreQueueTest, ASessionKilledMidTurnGivesItsTurnAway) {
  UseFakeClock();
  auto doomed = MakeSession(1);
  auto other = MakeSession(2);
  std::shared_ptr<Stream> doomed_stream = MakeStream(doomed);
  std::shared_ptr<Stream> other_stream = MakeStream(other);
  for (int i = 0; i < 20; ++i) Append(*doomed_stream, NEURON_RTD_OP_SIGNAL);
  for (int i = 0; i < 5; ++i) Append(*other_stream, NEURON_RTD_OP_SIGNAL);
  ASSERT_TRUE(queue_->Attach(doomed_stream).ok());
  log_.held.WaitForNotification();
  ASSERT_TRUE(queue_->Attach(other_stream).ok());
  // As Session::Close does: the timeline fails, the stream leaves its queue.
  doomed_stream->Fail(2, NEURON_RTD_STATUS_CLOSED);
  queue_->Detach(*doomed_stream);
  log_.released.Notify();
  AwaitCompletions(6);
  const std::vector<uint64_t> order = Completions();
  EXPECT_EQ(std::count(order.begin(), order.end(), doomed_stream->id()), 1);
  EXPECT_EQ(other_stream->completed(), 5u);
}

}  // namespace
}  // namespace neuron::rtd::queue

namespace neuron::rtd::queue {
namespace {

TEST_F(CoreQueueTest, QueuedCommandsAreCountedFromTheRingAndNeverTrustIt) {
  auto session = MakeSession(1);
  std::shared_ptr<Stream> stream = MakeStream(session);
  EXPECT_EQ(stream->QueuedCommands(), 0u);
  for (int i = 0; i < 5; ++i) Append(*stream, NEURON_RTD_OP_SIGNAL);
  EXPECT_EQ(stream->QueuedCommands(), 5u);

  auto* header = reinterpret_cast<neuron_rtd_ring_header*>(stream->ring().data());
  const uint64_t tail = header->tail;
  // A tail more than a ring ahead, a head in the middle of a record, a
  // head past the end of the ring: counted as what can be parsed, or none.
  header->tail = tail + (1ull << 40);
  EXPECT_EQ(stream->QueuedCommands(), 0u);
  header->tail = tail;
  header->head = 8;
  EXPECT_LE(stream->QueuedCommands(), 5u);
  header->head = header->capacity_bytes - 4;
  header->tail = header->head + 64;
  EXPECT_EQ(stream->QueuedCommands(), 0u);
  header->head = 0;
  header->tail = tail;

  ASSERT_TRUE(queue_->Attach(stream).ok());
  log_.released.Notify();
  AwaitCompletions(5);
  EXPECT_EQ(stream->QueuedCommands(), 0u);
}

}  // namespace
}  // namespace neuron::rtd::queue

namespace neuron::rtd::queue {
namespace {

TEST_F(CoreQueueTest, AStreamThatJumpsTheFairOrderByPriorityDoesNotBringItsSessionsBacklog) {
  UseFakeClock();
  // P keeps a backlog as heavy as two hogs'; once they have shared the core
  // for a while, P's high-priority command arrives.
  auto p = MakeSession(1);
  std::shared_ptr<Stream> backlog = MakeStream(p, 0);
  std::shared_ptr<Stream> urgent = MakeStream(p, -3);
  std::vector<std::shared_ptr<Stream>> hogs = {MakeStream(MakeSession(2)),
                                               MakeStream(MakeSession(3))};
  for (const auto& stream : {backlog, hogs[0], hogs[1]}) {
    for (int i = 0; i < 20; ++i) Append(*stream, NEURON_RTD_OP_SIGNAL);
    log_.cost_ns[stream->id()] = kHogCommandNs;
  }
  Append(*urgent, NEURON_RTD_OP_SIGNAL);
  log_.cost_ns[urgent->id()] = kLightCommandNs;
  log_.hold_at = 7;
  ASSERT_TRUE(queue_->Attach(backlog).ok());
  ASSERT_TRUE(queue_->Attach(hogs[0]).ok());
  ASSERT_TRUE(queue_->Attach(hogs[1]).ok());
  log_.held.WaitForNotification();
  ASSERT_TRUE(queue_->Attach(urgent).ok());
  log_.released.Notify();
  AwaitCompletions(61);
  const std::vector<uint64_t> order = Completions();
  const auto at = std::find(order.begin(), order.end(), urgent->id());
  ASSERT_NE(at, order.end());
  // The urgent command ran at the next boundary...
  EXPECT_LE(at - order.begin(), 7);
  // ...and P's backlog did not follow it out of turn: P was a command
  // ahead of the hogs when it jumped.
  ASSERT_LT(at + 1, order.end());
  EXPECT_NE(*(at + 1), backlog->id());
}

}  // namespace
}  // namespace neuron::rtd::queue

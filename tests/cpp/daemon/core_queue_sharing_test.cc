// How a core's queue shares it: sessions by device time (on a fake clock
// here) however many streams each has, weighted, priorities within and
// across them, and a killed session's turn handed over.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "daemon/core_queue_fixture.h"

namespace neuron::rtd::queue {
namespace {

constexpr int64_t kHogCommandNs = 18'000'000;  // a 1024x1024 product on the simulated core
constexpr int64_t kLightCommandNs = 10'000;

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

TEST_F(CoreQueueTest, TheCoreDoesNotIdleForAClientBesideTenantsOfTinyCommands) {
  // An hour's anticipation window: only the others' command times bound it.
  UseFakeClock(std::chrono::hours(1));
  constexpr int kTenantCommands = 150;  // 20 us each: more than a 2 ms quantum
  auto tenant = MakeSession(1);
  auto client = MakeSession(2);
  std::shared_ptr<Stream> tenant_stream = MakeStream(tenant);
  std::shared_ptr<Stream> client_stream = MakeStream(client);
  for (int i = 0; i < kTenantCommands; ++i) Append(*tenant_stream, NEURON_RTD_OP_SIGNAL);
  Append(*client_stream, NEURON_RTD_OP_SIGNAL);
  log_.cost_ns[tenant_stream->id()] = 20'000;
  log_.cost_ns[client_stream->id()] = 1'000;
  ASSERT_TRUE(queue_->Attach(tenant_stream).ok());
  log_.held.WaitForNotification();
  ASSERT_TRUE(queue_->Attach(client_stream).ok());
  log_.released.Notify();
  // The client gets the core once the tenant's quantum is used, runs dry,
  // and is owed service; waiting for its next command (which never comes)
  // is bounded by the tenant's 20 us commands, not by the window: the
  // tenant's work goes on.
  AwaitCompletions(kTenantCommands + 1);
  EXPECT_EQ(tenant_stream->completed(), uint64_t{kTenantCommands});
  EXPECT_EQ(client_stream->completed(), 1u);
}

TEST_F(CoreQueueTest, TimeTheHostTookFromTheWorkerIsNotChargedToTheSession) {
  // A host that lets the worker run a tenth of the time: each command takes
  // 10 ms on the wall clock and 1 ms of the worker's CPU.
  queue_.reset();
  log_.clock = &fake_clock_;
  auto queue = CoreQueue::Create(
      0, *backend_->devices()[0],
      CoreQueueOptions{.anticipation = std::chrono::nanoseconds(0),
                       .clock = [this] { return fake_clock_.load(); },
                       .thread_cpu_clock = [this] { return fake_clock_.load() / 10; }});
  ASSERT_TRUE(queue.ok()) << queue.status();
  queue_ = *std::move(queue);
  auto session = MakeSession(1);
  std::shared_ptr<Stream> stream = MakeStream(session);
  for (int i = 0; i < 5; ++i) Append(*stream, NEURON_RTD_OP_SIGNAL);
  log_.cost_ns[stream->id()] = 10'000'000;
  log_.first = false;  // no gate
  ASSERT_TRUE(queue_->Attach(stream).ok());
  AwaitCompletions(5);
  queue_.reset();  // the turn ends and is reported
  EXPECT_EQ(session->device_time_ns.load(), 5u * 1'000'000);
}

TEST_F(CoreQueueTest, ASessionAloneOnTheCoreHasItsDeviceTimeReportedWhileItsTurnLasts) {
  UseFakeClock();
  auto session = MakeSession(1);
  std::shared_ptr<Stream> stream = MakeStream(session);
  for (int i = 0; i < 240; ++i) Append(*stream, NEURON_RTD_OP_SIGNAL);  // a ring holds 256
  log_.cost_ns[stream->id()] = 1'000'000;
  log_.hold_at = 200;
  ASSERT_TRUE(queue_->Attach(stream).ok());
  // Inside the 200th command the session's turn goes on (it is alone and
  // has work); what it ran is reported every 50 ms of device time all the
  // same.
  log_.held.WaitForNotification();
  EXPECT_GE(session->device_time_ns.load(), 150u * 1'000'000);
  log_.released.Notify();
  AwaitCompletions(240);
  queue_.reset();
  EXPECT_EQ(session->device_time_ns.load(), 240u * 1'000'000);
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
  doomed_stream->Fail(2, NEURON_RTD_STATUS_CLOSED, "its session closed");
  queue_->Detach(*doomed_stream);
  log_.released.Notify();
  AwaitCompletions(6);
  const std::vector<uint64_t> order = Completions();
  EXPECT_EQ(std::count(order.begin(), order.end(), doomed_stream->id()), 1);
  EXPECT_EQ(other_stream->completed(), 5u);
}

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

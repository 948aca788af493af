// The core queue's mechanics: a large transfer yields the DMA engine
// between chunks, detached and destroyed streams are let go and stay
// answered, queued commands are counted without trusting the ring, recent
// utilization fades with its window.
#include <gtest/gtest.h>

#include <cmath>

#include "daemon/core_queue_fixture.h"

namespace neuron::rtd::queue {
namespace {

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

TEST_F(CoreQueueTest, ASessionWithManyStreamsGetsOneSessionsShareOfTheDmaEngine) {
  constexpr uint64_t kFill = 64ull << 20;  // 8 chunks
  constexpr int kStreamsOfA = 4;
  auto a = MakeSession(1, kStreamsOfA * kFill);
  auto b = MakeSession(2, kFill);
  std::vector<std::shared_ptr<Stream>> a_streams;
  for (int i = 0; i < kStreamsOfA; ++i) {
    a_streams.push_back(MakeStream(a));
    AppendFill(*a_streams.back(), a->address() + i * kFill, kFill);
  }
  std::shared_ptr<Stream> b_stream = MakeStream(b);
  // B's first command holds the worker until A's streams are attached, so
  // that all five fills reach the DMA engine together.
  Append(*b_stream, NEURON_RTD_OP_SIGNAL);
  AppendFill(*b_stream, b->address(), kFill);
  ASSERT_TRUE(queue_->Attach(b_stream).ok());
  log_.held.WaitForNotification();
  for (const auto& stream : a_streams) ASSERT_TRUE(queue_->Attach(stream).ok());
  log_.released.Notify();
  AwaitCompletions(2 + kStreamsOfA);
  // B had half the engine, so its fill finished first; by job, A's four
  // would have had four fifths and finished in the same round as B's.
  const std::vector<uint64_t> order = Completions();
  ASSERT_EQ(order.size(), 2u + kStreamsOfA);
  EXPECT_EQ(order[1], b_stream->id());
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

TEST_F(CoreQueueTest, AWaitOnAFailedStreamSaysWhyThatStreamFailed) {
  auto session = MakeSession(1);
  log_.first = false;  // no gate
  session->errors_expected = true;
  // Its first command fails it (a WAIT on a stream the session lacks).
  std::shared_ptr<Stream> failing = MakeStream(session);
  session->Add(failing);
  const neuron_rtd_wait_payload nowhere{.stream_id = 999, .value = 1};
  Append(*failing, NEURON_RTD_OP_WAIT, &nowhere, sizeof(nowhere));
  ASSERT_TRUE(queue_->Attach(failing).ok());
  AwaitCompletions(1);
  ASSERT_TRUE(failing->failed());
  // A stream ordered after it (as an async collective's event orders the
  // caller's stream) fails with the cause, not only "it failed".
  std::shared_ptr<Stream> waiter = MakeStream(session);
  const neuron_rtd_wait_payload after{.stream_id = failing->id(), .value = 1};
  Append(*waiter, NEURON_RTD_OP_WAIT, &after, sizeof(after));
  ASSERT_TRUE(queue_->Attach(waiter).ok());
  AwaitCompletions(2);
  ASSERT_EQ(session->errors().size(), 2u);
  EXPECT_THAT(session->errors()[1],
              ::testing::AllOf(::testing::HasSubstr("waited on until 1, failed: command 1 (WAIT"),
                               ::testing::HasSubstr("WAIT names stream 999")));
}

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
TEST_F(CoreQueueTest, StatsCountCommandsByKindOutcomeAndEngineAndTheQueueDepth) {
  constexpr uint64_t kLarge = 24ull << 20;  // three DMA chunks, one command
  auto session = MakeSession(1, kLarge);
  std::shared_ptr<Stream> stream = MakeStream(session);
  Append(*stream, NEURON_RTD_OP_SIGNAL);  // holds the worker
  for (int i = 0; i < 4; ++i) Append(*stream, NEURON_RTD_OP_SIGNAL);
  AppendFill(*stream, session->address(), kLarge);
  ASSERT_TRUE(queue_->Attach(stream).ok());
  log_.held.WaitForNotification();
  // The held SIGNAL has started; the other five wait behind it.
  EXPECT_EQ(queue_->stats().queued_commands, 5u);
  log_.released.Notify();
  AwaitCompletions(6);
  // A fill beyond the session's memory fails the stream; what follows it is
  // drained, never run.
  session->errors_expected = true;
  AppendFill(*stream, session->address() + kLarge, 8);
  Append(*stream, NEURON_RTD_OP_SIGNAL);
  queue_->Wake();
  AwaitCompletions(7);
  for (const absl::Time until = absl::Now() + absl::Seconds(30);
       stream->QueuedCommands() > 0 && absl::Now() < until;) {
    absl::SleepFor(absl::Milliseconds(1));
  }

  const CoreQueue::Stats stats = queue_->stats();
  const auto count = [&](uint16_t opcode, CommandOutcome outcome) {
    return stats.counters.commands[opcode][static_cast<size_t>(outcome)];
  };
  EXPECT_EQ(count(NEURON_RTD_OP_SIGNAL, CommandOutcome::kCompleted), 5u);
  EXPECT_EQ(count(NEURON_RTD_OP_FILL, CommandOutcome::kCompleted), 1u);
  EXPECT_EQ(count(NEURON_RTD_OP_FILL, CommandOutcome::kFailed), 1u);
  EXPECT_EQ(count(NEURON_RTD_OP_SIGNAL, CommandOutcome::kAbandoned), 1u);
  EXPECT_EQ(stats.counters.CountWithOutcome(CommandOutcome::kRejected), 0u);
  EXPECT_EQ(stats.queued_commands, 0u);
  // Every command that ran is one entry of the histogram, the large fill
  // once however many chunks it took.
  uint64_t executions = 0;
  for (uint64_t bucket : stats.counters.execution_log2_ns) executions += bucket;
  EXPECT_EQ(executions, 5u + 1u + 1u);
  EXPECT_GT(stats.counters.busy_ns[static_cast<size_t>(CoreEngine::kDma)], 0u);
  EXPECT_GT(stats.counters.busy_ns[static_cast<size_t>(CoreEngine::kCompute)], 0u);
  EXPECT_GE(stats.counters.execution_ns_sum, stats.counters.busy_ns[1]);
}

TEST_F(CoreQueueTest, ProfiledRecordsAreStampedByTheQueueClock) {
  UseFakeClock();
  constexpr uint64_t kLarge = 24ull << 20;  // three DMA chunks
  auto session = MakeSession(1, kLarge);
  std::shared_ptr<Stream> stream = MakeStream(session);
  Append(*stream, NEURON_RTD_OP_SIGNAL);
  AppendFill(*stream, session->address(), 4096, /*profile_correlation=*/7);
  Append(*stream, NEURON_RTD_OP_SIGNAL, nullptr, 0, /*profile_correlation=*/0);
  AppendFill(*stream, session->address(), kLarge, /*profile_correlation=*/9);
  Append(*stream, NEURON_RTD_OP_SIGNAL);
  log_.released.Notify();
  ASSERT_TRUE(queue_->Attach(stream).ok());
  AwaitCompletions(5);

  // Unprofiled records are not reported; each command costs the fake clock
  // 1000 ns once done, so starts step by 1000 and a small fill ends where it
  // starts. The large fill runs on the DMA engine, in three chunks.
  const std::vector<ProfiledCommand> profiled = session->profiled();
  ASSERT_EQ(profiled.size(), 3u);
  EXPECT_EQ(profiled[0].correlation_id, 7u);
  EXPECT_EQ(profiled[0].engine, hal::Engine::kDma);
  EXPECT_EQ(profiled[0].bytes, 4096u);
  EXPECT_EQ(profiled[0].sequence, 2u);
  EXPECT_EQ(profiled[0].end_ns, profiled[0].start_ns);
  EXPECT_EQ(profiled[1].correlation_id, 0u);
  EXPECT_EQ(profiled[1].engine, hal::Engine::kSync);
  EXPECT_EQ(profiled[1].start_ns, profiled[0].end_ns + 1000);
  EXPECT_EQ(profiled[2].correlation_id, 9u);
  EXPECT_EQ(profiled[2].bytes, kLarge);
  EXPECT_EQ(profiled[2].start_ns, profiled[1].end_ns + 1000);
  EXPECT_GE(profiled[2].end_ns, profiled[2].start_ns);
  for (const ProfiledCommand& command : profiled) {
    EXPECT_EQ(command.stream_id, stream->id());
    EXPECT_EQ(command.core, queue_->core());
    EXPECT_FALSE(command.failed);
  }
}

TEST_F(CoreQueueTest, RecentUtilizationIsTheComputeEnginesBusyShareOfAboutTheLastSecond) {
  UseFakeClock();
  auto session = MakeSession(1);
  std::shared_ptr<Stream> stream = MakeStream(session);
  // One second of back-to-back 10 ms commands from idle: a window of one
  // second holds 1 - 1/e of a fully busy core.
  constexpr int kCommands = 100;
  for (int i = 0; i < kCommands; ++i) Append(*stream, NEURON_RTD_OP_SIGNAL);
  log_.cost_ns[stream->id()] = 10'000'000;
  EXPECT_EQ(queue_->stats().recent_compute_utilization, 0);
  log_.released.Notify();  // no completion holds the worker
  ASSERT_TRUE(queue_->Attach(stream).ok());
  AwaitCompletions(kCommands);
  EXPECT_NEAR(queue_->stats().recent_compute_utilization, 1 - std::exp(-1.0), 0.02);

  // Five idle seconds later it has faded out.
  fake_clock_ += 5'000'000'000;
  EXPECT_LT(queue_->stats().recent_compute_utilization, 0.01);
}

}  // namespace neuron::rtd::queue

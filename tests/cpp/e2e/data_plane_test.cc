// Sessions, device memory and the shared-memory data plane, against a real
// daemon: copies, fills, launches, streams and events, errors, concurrency,
// other processes and dying peers. Hostile clients and quotas:
// hostile_client_test.cc; administration: administration_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <numeric>
#include <thread>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "e2e/data_plane_fixture.h"
#include "e2e/eager_op_builders.h"
#include "e2e/raw_session.h"
#include "neuronrt/session.h"
#include "nlohmann/json.hpp"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace neuron {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST_F(DataPlaneTest, AllocationShowsInListDevicesAndOutOfMemoryHasNumbers) {
  auto session = Open();
  auto first = session->Allocate(0, 3 * kGiB);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(HbmUsed(), 3 * kGiB);
  auto too_big = session->Allocate(1, 2 * kGiB);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(too_big.status().message(),
              AllOf(HasSubstr("requested 2147483648 bytes"), HasSubstr("bytes free")));
  ASSERT_TRUE(session->Free(*first).ok());
  EXPECT_EQ(HbmUsed(), 0u);
  EXPECT_TRUE(session->Allocate(1, 2 * kGiB).ok());
  EXPECT_EQ(session->Free(*first).code(), absl::StatusCode::kNotFound) << "double free";
  EXPECT_EQ(session->Allocate(7, kMiB).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(DataPlaneTest, OutOfMemoryNamesTheSessionsHoldingTheDevice) {
  auto big = Open("big-holder");
  auto small = Open("small-holder");
  auto asking = Open("asking");
  ASSERT_TRUE(big->Allocate(0, 2 * kGiB).ok());
  ASSERT_TRUE(small->Allocate(1, kGiB).ok());
  absl::Status refused = asking->Allocate(0, 3 * kGiB).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("device 0's HBM is held by session"));
  const std::string message(refused.message());
  const size_t big_at = message.find("big-holder) 2147483648 bytes");
  const size_t small_at = message.find("small-holder) 1073741824 bytes");
  ASSERT_NE(big_at, std::string::npos) << message;
  ASSERT_NE(small_at, std::string::npos) << message;
  EXPECT_LT(big_at, small_at) << "largest first";
  EXPECT_THAT(message, HasSubstr(absl::StrFormat("(pid %d, uid %d, big-holder)", ::getpid(),
                                                 ::getuid())));
  // A session's own quota or cap names no one.
  ASSERT_TRUE(asking->SetMemoryCap(0, kMiB).ok());
  EXPECT_THAT(asking->Allocate(0, 2 * kMiB).status().message(),
              ::testing::Not(HasSubstr("is held by")));
}

TEST_F(DataPlaneTest, CopiesRoundTripAtEverySizeEdge) {
  auto session = Open();
  auto buffer = session->Allocate(0, 64 * kMiB);
  ASSERT_TRUE(buffer.ok());
  auto stream = *session->CreateStream(0);
  for (uint64_t size : {uint64_t{0}, uint64_t{1}, uint64_t{7}, uint64_t{4095}, uint64_t{4096},
                        kMiB + 3, 40 * kMiB + 5}) {
    for (uint64_t offset : {uint64_t{0}, uint64_t{3}}) {
      std::vector<uint8_t> data = Pattern(size, static_cast<uint32_t>(size + offset));
      std::vector<uint8_t> back(size, 0xee);
      auto copied = stream->CopyToDevice(buffer->device_address + offset, data.data(), size);
      ASSERT_TRUE(copied.ok()) << copied.status();
      ASSERT_TRUE(stream->CopyToHost(back.data(), buffer->device_address + offset, size).ok());
      EXPECT_EQ(back, data) << "size " << size << " offset " << offset;
    }
  }
}

TEST_F(DataPlaneTest, PinnedAndDeviceToDeviceCopies) {
  auto session = Open();
  auto a = *session->Allocate(0, 8 * kMiB);
  auto b = *session->Allocate(1, 8 * kMiB);
  auto pinned = session->AllocateHost(8 * kMiB);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  std::vector<uint8_t> data = Pattern(8 * kMiB, 5);
  std::memcpy((*pinned)->data(), data.data(), data.size());
  auto stream = *session->CreateStream(0);
  ASSERT_TRUE(stream->CopyToDevice(a.device_address, **pinned, 0, data.size()).ok());
  ASSERT_TRUE(stream->CopyOnDevice(b.device_address, a.device_address, data.size()).ok());
  // Pinned memory is read asynchronously: reuse it only after the copy.
  ASSERT_TRUE(stream->Synchronize().ok());
  std::memset((*pinned)->data(), 0, data.size());
  auto back = stream->CopyToHost(**pinned, 0, b.device_address, data.size());
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(back->Synchronize().ok());
  EXPECT_EQ(std::memcmp((*pinned)->data(), data.data(), data.size()), 0);
  EXPECT_EQ(stream->CopyToDevice(a.device_address, **pinned, 8 * kMiB - 1, 2).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST_F(DataPlaneTest, FillWritesEveryPatternWidth) {
  auto session = Open();
  auto buffer = *session->Allocate(0, kMiB);
  auto stream = *session->CreateStream(0);
  struct Case {
    uint64_t pattern;
    uint32_t width;
  };
  for (Case fill : {Case{0xab, 1}, Case{0x1234, 2}, Case{0xdeadbeef, 4},
                    Case{0x0102030405060708, 8}}) {
    ASSERT_TRUE(stream->Fill(buffer.device_address, 64, fill.pattern, fill.width).ok());
    std::vector<uint8_t> back(64);
    ASSERT_TRUE(stream->CopyToHost(back.data(), buffer.device_address, 64).ok());
    for (size_t offset = 0; offset < 64; offset += fill.width) {
      EXPECT_EQ(std::memcmp(back.data() + offset, &fill.pattern, fill.width), 0) << fill.width;
    }
  }
}

TEST_F(DataPlaneTest, BuiltinAddKernelRunsOnTheCore) {
  auto session = Open();
  constexpr uint64_t kCount = 1000;
  auto a = *session->Allocate(0, kCount * 4);
  auto b = *session->Allocate(0, kCount * 4);
  auto out = *session->Allocate(0, kCount * 4);
  std::vector<float> x(kCount), y(kCount), z(kCount);
  std::iota(x.begin(), x.end(), 0.0f);
  std::fill(y.begin(), y.end(), 0.25f);
  auto stream = *session->CreateStream(0);
  ASSERT_TRUE(stream->CopyToDevice(a.device_address, x.data(), kCount * 4).ok());
  ASSERT_TRUE(stream->CopyToDevice(b.device_address, y.data(), kCount * 4).ok());
  const uint64_t args[] = {a.device_address, b.device_address, out.device_address};
  uint64_t count = kCount;
  auto launched = stream->Launch(NEURON_RTD_EXEC_BUILTIN_ADD_F32, args,
                                 std::span(reinterpret_cast<const uint8_t*>(&count), 8), "add");
  ASSERT_TRUE(launched.ok());
  ASSERT_TRUE(stream->CopyToHost(z.data(), out.device_address, kCount * 4).ok());
  for (uint64_t i = 0; i < kCount; ++i) ASSERT_FLOAT_EQ(z[i], static_cast<float>(i) + 0.25f);

  // Arguments are checked like every other address.
  const uint64_t short_args[] = {a.device_address, b.device_address,
                                 out.device_address + out.size - 8};
  ASSERT_TRUE(stream->Launch(NEURON_RTD_EXEC_BUILTIN_ADD_F32, short_args,
                             std::span(reinterpret_cast<const uint8_t*>(&count), 8), "add")
                  .ok());
  EXPECT_THAT(stream->Synchronize().message(), HasSubstr("past the end of segment"));
}

TEST_F(DataPlaneTest, RecordsAsLargeAsTheSmallestRingGoThroughIt) {
  auto session = *neuronrt::Session::Open(
      {.client = {.address = address()}, .ring_bytes = NEURON_RTD_MIN_RING_BYTES});
  const uint64_t neg = *session->LoadExecutable(testing::NegBody(4));
  auto buffer = *session->Allocate(0, 4096);
  std::vector<uint64_t> addresses(NEURON_RTD_MAX_LAUNCH_ARGS, buffer.device_address);
  addresses[1] = buffer.device_address + 1024;
  // Every address and as many scalars as fit: a record of nearly 32 KiB,
  // which after any other record must wait for the ring's end to be padded
  // and consumed (it once waited for more room than the ring has).
  std::vector<uint8_t> scalars(NEURON_RTD_MAX_RECORD_BYTES - 64 -
                               NEURON_RTD_MAX_LAUNCH_ARGS * sizeof(uint64_t));
  auto stream = *session->CreateStream(0);
  for (int i = 0; i < 16; ++i) {
    ASSERT_TRUE(stream->Launch(neg, std::span(addresses.data(), 2), {}).ok());
    ASSERT_TRUE(stream->Launch(neg, addresses, scalars).ok());
  }
  EXPECT_TRUE(stream->Synchronize().ok());
}

TEST_F(DataPlaneTest, EventsOrderStreamsOnTheSameAndOtherCores) {
  auto session = Open();
  auto source = *session->Allocate(0, 32 * kMiB);
  auto middle = *session->Allocate(0, 32 * kMiB);
  auto target = *session->Allocate(1, 32 * kMiB);
  auto loader = *session->CreateStream(0);
  auto mover = *session->CreateStream(0);
  auto other_core = *session->CreateStream(1);
  std::vector<uint8_t> data = Pattern(32 * kMiB, 9);
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(loader->Fill(source.device_address, 32 * kMiB, round, 1).ok());
    ASSERT_TRUE(loader->CopyToDevice(source.device_address, data.data(), data.size()).ok());
    auto loaded = *loader->Record();
    // The waits are enqueued before the large copy has run: the daemon holds
    // them back, not the client.
    ASSERT_TRUE(mover->Wait(loaded).ok());
    ASSERT_TRUE(mover->CopyOnDevice(middle.device_address, source.device_address, data.size()).ok());
    ASSERT_TRUE(other_core->Wait(*mover->Record()).ok());
    ASSERT_TRUE(
        other_core->CopyOnDevice(target.device_address, middle.device_address, data.size()).ok());
    std::vector<uint8_t> back(data.size());
    ASSERT_TRUE(other_core->CopyToHost(back.data(), target.device_address, back.size()).ok());
    ASSERT_EQ(back, data) << "round " << round;
  }
  auto done = *other_core->Record();
  EXPECT_TRUE(*done.Query());
}

TEST_F(DataPlaneTest, WaitBeforeSignal) {
  auto session = Open();
  auto buffer = *session->Allocate(0, kMiB);
  auto producer = *session->CreateStream(0);
  auto consumer = *session->CreateStream(1);
  // The consumer waits for a value the producer has not submitted yet.
  const neuronrt::Event future = producer->EventAt(producer->Record()->value() + 1);
  ASSERT_TRUE(consumer->Wait(future).ok());
  std::vector<uint8_t> back(16);
  auto pinned = *session->AllocateHost(16);
  auto landed = consumer->CopyToHost(*pinned, 0, buffer.device_address, 16);
  ASSERT_TRUE(landed.ok());
  EXPECT_FALSE(*landed->Query()) << "the consumer must be held back";
  ASSERT_TRUE(producer->Fill(buffer.device_address, 16, 0x77, 1).ok());
  ASSERT_TRUE(landed->Synchronize().ok());
  EXPECT_EQ(std::memcmp(pinned->data(), std::vector<uint8_t>(16, 0x77).data(), 16), 0);
}

TEST_F(DataPlaneTest, ErrorsSurfaceAtTheNextSyncPointWithTheirContext) {
  auto session = Open();
  auto buffer = *session->Allocate(0, kMiB);
  auto failing = *session->CreateStream(0);
  auto healthy = *session->CreateStream(0);
  const uint8_t bytes[2] = {1, 2};
  auto enqueued = failing->CopyToDevice(buffer.device_address + kMiB - 1, bytes, 2, "aten::copy_");
  ASSERT_TRUE(enqueued.ok()) << "errors are asynchronous";
  absl::Status status = failing->Synchronize();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("COPY 'aten::copy_'"),
                                      HasSubstr("runs 1 bytes past the end of segment")));
  EXPECT_EQ(enqueued->Synchronize().code(), absl::StatusCode::kInvalidArgument);
  // Sticky: the stream refuses more work with the same error.
  EXPECT_EQ(failing->Fill(buffer.device_address, 8, 0, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Another stream, and the session, are unaffected.
  EXPECT_TRUE(healthy->Fill(buffer.device_address, kMiB, 7, 1).ok());
  EXPECT_TRUE(healthy->Synchronize().ok());
  // A stream that waits on a failed one fails too.
  auto waiter = *session->CreateStream(1);
  ASSERT_TRUE(waiter->Wait(*enqueued).ok());
  EXPECT_THAT(waiter->Synchronize().message(), HasSubstr("failed"));
}

TEST_F(DataPlaneTest, ManyThreadsSubmitAtOnce) {
  auto session = Open();
  constexpr int kThreads = 4;
  constexpr int kRounds = 100;
  auto buffer = *session->Allocate(0, (kThreads + 1) * 4096);
  auto shared_stream = *session->CreateStream(0);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto own = session->CreateStream(t % 2);
      if (!own.ok()) {
        ++failures;
        return;
      }
      const uint64_t address = buffer.device_address + t * 4096;
      for (int round = 0; round < kRounds; ++round) {
        std::vector<uint8_t> data = Pattern(4096, t * 1000 + round);
        std::vector<uint8_t> back(4096);
        auto copied = (*own)->CopyToDevice(address, data.data(), 4096);
        absl::Status status = copied.ok() ? (*own)->CopyToHost(back.data(), address, 4096)
                                          : copied.status();
        if (!status.ok() || back != data) {
          ADD_FAILURE() << "thread " << t << " round " << round << ": " << status;
          ++failures;
        }
        if (!shared_stream->Fill(address + 4096 * kThreads, 64, round, 1).ok()) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(shared_stream->Synchronize().ok());
}

TEST_F(DataPlaneTest, ABusySessionDoesNotStarveAnotherOnTheSameCore) {
  auto busy = Open("busy");
  auto quiet = Open("quiet");
  auto busy_buffer = *busy->Allocate(0, kMiB);
  auto quiet_buffer = *quiet->Allocate(0, kMiB);
  std::atomic<bool> stop{false};
  std::vector<std::thread> flooders;
  for (int i = 0; i < 4; ++i) {
    flooders.emplace_back([&] {
      auto stream = *busy->CreateStream(0);
      while (!stop.load()) {
        if (!stream->Fill(busy_buffer.device_address, 4096, 1, 1).ok()) return;
      }
      EXPECT_TRUE(stream->Synchronize().ok());
    });
  }
  auto stream = *quiet->CreateStream(0);
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(stream->Fill(quiet_buffer.device_address, 64, i, 1).ok());
    ASSERT_TRUE(stream->Synchronize().ok());
  }
  stop = true;
  for (auto& flooder : flooders) flooder.join();
}

// The noisy neighbour, as a test of order: a light session's batch of small
// commands, submitted while three sessions keep a backlog of ~1 ms fills on
// the same core, runs after about one of their commands (by record count, the
// batch waited for a turn of 32 of each hog's).
TEST_F(DataPlaneTest, ALightSessionsBatchRunsAheadOfHeavyNeighboursBacklogs) {
  // Hog commands (16 M-element adds, milliseconds each) far longer than a
  // host scheduler slice, so that this thread losing its CPU for one cannot
  // make the count below, and far longer than the quantum (50 us here, so
  // that each ends its session's turn, as a 1024x1024 product does).
  StartDaemon({"--config", dir_.WriteFile("rtd.toml", "[scheduler]\nquantum_us = 50\n")});
  constexpr uint64_t kHogElements = 16 << 20;
  constexpr int kHogCommands = 12;
  constexpr int kLightCommands = 40;
  struct Hog {
    std::unique_ptr<neuronrt::Session> session;
    std::shared_ptr<neuronrt::Stream> stream;
    std::vector<neuronrt::Event> events;
  };
  std::vector<Hog> hogs(3);
  for (Hog& hog : hogs) {
    hog.session = Open("hog");
    const uint64_t address = hog.session->Allocate(0, kHogElements * 4)->device_address;
    hog.stream = *hog.session->CreateStream(0);
    const uint64_t args[] = {address, address, address};
    const uint64_t count = kHogElements;
    for (int i = 0; i < kHogCommands; ++i) {
      hog.events.push_back(*hog.stream->Launch(
          NEURON_RTD_EXEC_BUILTIN_ADD_F32, args,
          std::span(reinterpret_cast<const uint8_t*>(&count), sizeof(count)), "hog"));
    }
  }
  auto completed = [&] {
    int count = 0;
    for (const Hog& hog : hogs) {
      for (const neuronrt::Event& event : hog.events) count += *event.Query() ? 1 : 0;
    }
    return count;
  };
  for (const Hog& hog : hogs) ASSERT_TRUE(hog.events.front().Synchronize().ok());

  auto light = Open("light");
  const uint64_t light_address = light->Allocate(0, kMiB)->device_address;
  // The batch is queued behind a WAIT on a gate stream and released whole,
  // so that the order below depends on the queue, not on this thread
  // keeping its CPU between two submissions.
  auto gate = *light->CreateStream(0);
  auto stream = *light->CreateStream(0);
  ASSERT_TRUE(stream->Wait(gate->EventAt(1)).ok());
  for (int i = 0; i < kLightCommands; ++i) {
    ASSERT_TRUE(stream->Fill(light_address, 64, i, 1).ok());
  }
  const int before = completed();
  ASSERT_TRUE(gate->Fill(light_address, 64, 0, 1).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  const int during = completed() - before;
  ASSERT_LT(completed(), 3 * kHogCommands) << "the hogs ran out of work: no contention";
  // The hog command running when the gate opened, the one whose session
  // wins the tie with the newcomer, and one that a counting thread
  // descheduled twice could see. Round robin by command count ran every
  // hog's backlog first.
  EXPECT_LE(during, 3);
  for (const Hog& hog : hogs) EXPECT_TRUE(hog.stream->Synchronize().ok());
}

TEST_F(DataPlaneTest, TwoProcessesShareACore) {
  std::vector<std::unique_ptr<testing::Subprocess>> probes;
  for (int i = 0; i < 2; ++i) {
    auto probe = testing::Subprocess::Spawn({testing::ClientProbeBinary(), "work", address(), "0"});
    ASSERT_TRUE(probe.ok());
    probes.push_back(*std::move(probe));
  }
  for (auto& probe : probes) {
    absl::StatusOr<int> code = probe->Wait(absl::Seconds(120));
    ASSERT_TRUE(code.ok());
    EXPECT_EQ(*code, 0) << probe->Stderr();
  }
}

TEST_F(DataPlaneTest, KilledClientsMemoryIsFreedAndOthersCarryOn) {
  auto session = Open("survivor");
  auto mine = *session->Allocate(0, kMiB);
  auto stream = *session->CreateStream(0);
  auto probe = testing::Subprocess::Spawn({testing::ClientProbeBinary(), "hold", address(), "0"});
  ASSERT_TRUE(probe.ok());
  ASSERT_TRUE((*probe)->WaitReady().ok()) << (*probe)->Stderr();
  EXPECT_EQ(HbmUsed(), kMiB + 64 * kMiB);
  testing::CommandResult ps = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", address(), "ps", "--json"});
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  const nlohmann::json sessions = nlohmann::json::parse(ps.out)["sessions"];
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[1]["pid"], (*probe)->pid());
  EXPECT_EQ(sessions[1]["hbm_used_bytes"], 64 * kMiB);
  EXPECT_EQ(sessions[1]["client_name"], "probe-hold");

  (*probe)->Signal(SIGKILL);
  ASSERT_TRUE((*probe)->Wait().ok());
  ASSERT_TRUE(WaitSessionGone((*probe)->pid()));
  EXPECT_TRUE(WaitHbmUsed(kMiB)) << HbmUsed();
  std::vector<uint8_t> data = Pattern(kMiB, 3), back(kMiB);
  ASSERT_TRUE(stream->CopyToDevice(mine.device_address, data.data(), kMiB).ok());
  ASSERT_TRUE(stream->CopyToHost(back.data(), mine.device_address, kMiB).ok());
  EXPECT_EQ(back, data);
}

TEST_F(DataPlaneTest, AnotherSessionsMemoryIsRefused) {
  auto victim = Open("victim");
  auto attacker = Open("attacker");
  auto secret = *victim->Allocate(0, kMiB);
  auto victim_stream = *victim->CreateStream(0);
  ASSERT_TRUE(victim_stream->Fill(secret.device_address, kMiB, 0x42, 1).ok());
  auto attacker_buffer = *attacker->Allocate(0, kMiB);
  auto attacker_stream = *attacker->CreateStream(0);
  ASSERT_TRUE(
      attacker_stream->CopyOnDevice(attacker_buffer.device_address, secret.device_address, 16).ok());
  EXPECT_THAT(attacker_stream->Synchronize().message(),
              HasSubstr("is not inside any segment of this session"));
  std::vector<uint8_t> back(16);
  ASSERT_TRUE(victim_stream->CopyToHost(back.data(), secret.device_address, 16).ok());
  EXPECT_EQ(back, std::vector<uint8_t>(16, 0x42));
  EXPECT_EQ(attacker->Free(secret).code(), absl::StatusCode::kNotFound);
}

TEST_F(DataPlaneTest, DaemonDeathEndsWaitsWithAnError) {
  auto session = Open();
  auto stream = *session->CreateStream(0);
  auto other = *session->CreateStream(0);
  // A wait that nothing will satisfy: the stream blocks in the daemon.
  ASSERT_TRUE(stream->Wait(other->EventAt(1000)).ok());
  std::atomic<bool> returned{false};
  absl::Status waited;
  std::thread waiter([&] {
    waited = stream->Synchronize();
    returned = true;
  });
  daemon_->Signal(SIGKILL);
  ASSERT_TRUE(daemon_->Wait().ok());
  waiter.join();
  EXPECT_TRUE(returned.load());
  EXPECT_FALSE(waited.ok());
  absl::Status after = stream->Synchronize();
  EXPECT_EQ(after.code(), absl::StatusCode::kUnavailable) << after;
  EXPECT_THAT(after.message(), HasSubstr("went away"));
}

TEST_F(DataPlaneTest, ADestroyedStreamFinishesWhatWasSubmitted) {
  auto session = Open();
  auto buffer = *session->Allocate(0, 32 * kMiB);
  auto reader = *session->CreateStream(0);
  std::vector<uint8_t> data = Pattern(32 * kMiB, 4);
  {
    auto writer = *session->CreateStream(1);
    ASSERT_TRUE(writer->CopyToDevice(buffer.device_address, data.data(), data.size()).ok());
    ASSERT_TRUE(reader->Wait(*writer->Record()).ok());
  }
  std::vector<uint8_t> back(data.size());
  ASSERT_TRUE(reader->CopyToHost(back.data(), buffer.device_address, back.size()).ok());
  EXPECT_EQ(back, data);
}

TEST_F(DataPlaneTest, StoppingTheDaemonEndsBusyClientsCleanly) {
  auto probe = testing::Subprocess::Spawn({testing::ClientProbeBinary(), "hold", address(), "0"});
  ASSERT_TRUE(probe.ok());
  ASSERT_TRUE((*probe)->WaitReady().ok()) << (*probe)->Stderr();
  auto session = Open();
  auto buffer = *session->Allocate(1, kMiB);
  auto stream = *session->CreateStream(1);
  daemon_->Signal(SIGTERM);
  absl::StatusOr<int> daemon_code = daemon_->Wait(absl::Seconds(30));
  ASSERT_TRUE(daemon_code.ok()) << "the daemon did not stop";
  EXPECT_EQ(*daemon_code, 0) << daemon_->Stderr();
  absl::StatusOr<int> probe_code = (*probe)->Wait(absl::Seconds(30));
  ASSERT_TRUE(probe_code.ok()) << "the busy client hung";
  EXPECT_EQ(*probe_code, 1);
  EXPECT_THAT((*probe)->Stderr(), HasSubstr("probe: "));
  absl::Status after = stream->Fill(buffer.device_address, 64, 0, 1).status();
  if (after.ok()) after = stream->Synchronize();
  EXPECT_TRUE(after.code() == absl::StatusCode::kAborted ||
              after.code() == absl::StatusCode::kUnavailable)
      << after;
}

TEST_F(DataPlaneTest, UnattachedSessionsExpire) {
  const std::string config = dir_.WriteFile("rtd.toml", "[session]\nattach_timeout_ms = 200\n");
  StartDaemon({"--config", config});
  rtd::v1::OpenSessionRequest request;
  request.set_abi_version_major(NEURON_RTD_ABI_VERSION_MAJOR);
  auto raw_stub = rtd::v1::Runtime::NewStub(
      grpc::CreateChannel(address(), grpc::InsecureChannelCredentials()));
  rtd::v1::OpenSessionResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(raw_stub->OpenSession(&context, request, &response).ok());
  EXPECT_TRUE(WaitSessionGone(::getpid()));
}

}  // namespace
}  // namespace neuron

// Segments shared between sessions (ExportSegment / ImportSegment, behind
// torch.multiprocessing of neuron tensors), against a real daemon: the same
// memory in both, lifetimes, holds, charging, hostile handles, concurrency.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "e2e/data_plane_fixture.h"
#include "neuronrt/session.h"

namespace neuron {
namespace {

using ::testing::HasSubstr;

std::vector<uint8_t> Read(neuronrt::Session& session, uint64_t address, size_t bytes) {
  auto stream = *session.CreateStream(0);
  std::vector<uint8_t> back(bytes, 0xee);
  EXPECT_TRUE(stream->CopyToHost(back.data(), address, bytes).ok());
  return back;
}

void Write(neuronrt::Session& session, uint64_t address, const std::vector<uint8_t>& data) {
  auto stream = *session.CreateStream(0);
  ASSERT_TRUE(stream->CopyToDevice(address, data.data(), data.size()).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
}

TEST_F(DataPlaneTest, ASharedSegmentIsTheSameMemoryInBothSessions) {
  auto producer = Open("producer");
  auto consumer = Open("consumer");
  auto buffer = producer->Allocate(0, 4 * kMiB);
  ASSERT_TRUE(buffer.ok());
  const std::vector<uint8_t> sent = Pattern(kMiB, 7);
  Write(*producer, buffer->device_address + 4096, sent);
  auto handle = producer->Share(*buffer);
  ASSERT_TRUE(handle.ok()) << handle.status();
  EXPECT_EQ(*producer->Share(*buffer), *handle) << "one handle per segment";

  auto imported = consumer->Import(*handle);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->device_address, buffer->device_address);
  EXPECT_EQ(imported->size, buffer->size);
  EXPECT_EQ(imported->core, 0u);
  EXPECT_EQ(Read(*consumer, imported->device_address + 4096, kMiB), sent);
  const std::vector<uint8_t> answer = Pattern(kMiB, 8);
  Write(*consumer, imported->device_address, answer);
  EXPECT_EQ(Read(*producer, buffer->device_address, kMiB), answer);
  EXPECT_EQ(HbmUsed(), buffer->size) << "shared, not copied";
  // The consumer reaches only what was shared: past the segment is not its.
  auto stream = *consumer->CreateStream(0);
  uint8_t byte = 0;
  EXPECT_FALSE(stream->CopyToHost(&byte, imported->device_address + imported->size, 1).ok());
}

TEST_F(DataPlaneTest, ImportedMemoryOutlivesItsExporterAndIsFreedByTheLastHolder) {
  auto producer = Open("producer");
  auto consumer = Open("consumer");
  auto buffer = *producer->Allocate(0, 2 * kMiB);
  const std::vector<uint8_t> sent = Pattern(kMiB, 3);
  Write(*producer, buffer.device_address, sent);
  const std::string handle = *producer->Share(buffer);
  auto imported = *consumer->Import(handle);
  producer.reset();  // the producer's process ends
  EXPECT_EQ(Read(*consumer, imported.device_address, kMiB), sent);
  EXPECT_EQ(HbmUsed(), buffer.size);
  // Still redeemable while the consumer holds it.
  auto third = Open("third");
  auto again = third->Import(handle);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE(third->Free(*again).ok());
  ASSERT_TRUE(consumer->Free(imported).ok());
  EXPECT_TRUE(WaitHbmUsed(0));
  absl::Status stale = third->Import(handle).status();
  EXPECT_EQ(stale.code(), absl::StatusCode::kNotFound) << stale;
  EXPECT_THAT(stale.message(), HasSubstr("no shared segment has this handle"));
}

TEST_F(DataPlaneTest, EachImportIsOneHoldAndTheExportersOwnImportToo) {
  auto producer = Open("producer");
  auto consumer = Open("consumer");
  auto buffer = *producer->Allocate(0, kMiB);
  const std::string handle = *producer->Share(buffer);
  auto first = *consumer->Import(handle);
  auto second = *consumer->Import(handle);
  EXPECT_EQ(first.segment_id, second.segment_id);
  ASSERT_TRUE(consumer->Free(first).ok());
  ASSERT_TRUE(producer->Free(buffer).ok());
  Write(*consumer, second.device_address, Pattern(4096, 1));  // still held once
  ASSERT_TRUE(consumer->Free(second).ok());
  EXPECT_EQ(consumer->Free(second).code(), absl::StatusCode::kNotFound) << "one free per hold";
  EXPECT_TRUE(WaitHbmUsed(0));

  // A process that receives its own tensor back holds it once more.
  auto own = *producer->Allocate(0, kMiB);
  auto back = *producer->Import(*producer->Share(own));
  ASSERT_TRUE(producer->Free(own).ok());
  Write(*producer, back.device_address, Pattern(4096, 2));
  ASSERT_TRUE(producer->Free(back).ok());
  EXPECT_TRUE(WaitHbmUsed(0));
}

TEST_F(DataPlaneTest, ASharedSegmentIsInUseUntilEverySendIsImportedAndFreed) {
  auto producer = Open("producer");
  auto consumer = Open("consumer");
  auto buffer = *producer->Allocate(0, kMiB);
  auto unshared = *producer->Allocate(0, kMiB);
  const std::vector<uint64_t> asked = {buffer.segment_id, unshared.segment_id, 999999};
  using ::testing::ElementsAre;
  EXPECT_THAT(*producer->SharedSegmentsInUse(asked), ElementsAre());
  const std::string handle = *producer->Share(buffer);
  ASSERT_TRUE(producer->Share(buffer).ok());  // sent twice
  EXPECT_THAT(*producer->SharedSegmentsInUse(asked), ElementsAre(buffer.segment_id));
  auto first = *consumer->Import(handle);
  ASSERT_TRUE(consumer->Free(first).ok());
  EXPECT_THAT(*producer->SharedSegmentsInUse(asked), ElementsAre(buffer.segment_id))
      << "one send is not received yet";
  auto second = *consumer->Import(handle);
  EXPECT_THAT(*producer->SharedSegmentsInUse(asked), ElementsAre(buffer.segment_id))
      << "the consumer holds it";
  ASSERT_TRUE(consumer->Free(second).ok());
  EXPECT_THAT(*producer->SharedSegmentsInUse(asked), ElementsAre());
  // Only the caller's own segments are answered for.
  EXPECT_THAT(*consumer->SharedSegmentsInUse(asked), ElementsAre());
  EXPECT_EQ(producer->SharedSegmentsInUse(std::vector<uint64_t>(65537, 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(DataPlaneTest, ImportedMemoryIsChargedToItsOwnerOnly) {
  auto producer = Open("producer");
  auto consumer = Open("consumer");
  ASSERT_TRUE(producer->SetMemoryCap(0, 8 * kMiB).ok());
  ASSERT_TRUE(consumer->SetMemoryCap(0, 0).ok());
  auto buffer = *producer->Allocate(0, 8 * kMiB);
  auto imported = consumer->Import(*producer->Share(buffer));
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(producer->Allocate(0, 1).status().code(), absl::StatusCode::kResourceExhausted);
  auto sessions = *Admin()->ListSessions();
  for (const auto& session : sessions) {
    if (session.client_name == "consumer") {
      EXPECT_EQ(session.hbm_used_bytes, 0u);
    } else if (session.client_name == "producer") {
      EXPECT_EQ(session.hbm_used_bytes, 8 * kMiB);
    }
  }
}

TEST_F(DataPlaneTest, ForgedShortAndForeignHandlesAreRefused) {
  auto session = Open();
  absl::Status short_handle = session->Import("forged").status();
  EXPECT_EQ(short_handle.code(), absl::StatusCode::kInvalidArgument) << short_handle;
  EXPECT_THAT(short_handle.message(), HasSubstr("a segment handle has 16 bytes"));
  EXPECT_EQ(session->Import(std::string(16, 'x')).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(session->Import(std::string(1 << 20, 'x')).status().code(),
            absl::StatusCode::kInvalidArgument);
  neuronrt::DeviceBuffer unknown{.segment_id = 12345};
  EXPECT_EQ(session->Share(unknown).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(DataPlaneTest, ConcurrentImportsAndFreesLeaveNothingBehind) {
  auto producer = Open("producer");
  auto buffer = *producer->Allocate(0, kMiB);
  const std::string handle = *producer->Share(buffer);
  std::vector<std::unique_ptr<neuronrt::Session>> consumers;
  for (int i = 0; i < 4; ++i) consumers.push_back(Open("consumer"));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (auto& consumer : consumers) {
    threads.emplace_back([&, session = consumer.get()] {
      for (int round = 0; round < 50; ++round) {
        auto imported = session->Import(handle);
        if (!imported.ok() || !session->Free(*imported).ok()) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE(producer->Free(buffer).ok());
  EXPECT_TRUE(WaitHbmUsed(0));
}

}  // namespace
}  // namespace neuron

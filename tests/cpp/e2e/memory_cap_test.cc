// A session's own cap on the memory it holds on one core (SetMemoryCap, what
// torch.neuron.set_per_process_memory_fraction asks for), enforced by the
// daemon beside its quota.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "e2e/data_plane_fixture.h"
#include "neuronrt/session.h"

namespace neuron {
namespace {

using ::testing::HasSubstr;

TEST_F(DataPlaneTest, MemoryCapBoundsOneCoreOfOneSession) {
  auto session = Open();
  auto other = Open("other");
  ASSERT_TRUE(session->SetMemoryCap(0, 4 * kMiB).ok());
  auto first = session->Allocate(0, 3 * kMiB);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::Status refused = session->Allocate(0, 2 * kMiB).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("memory cap on core 0"));
  EXPECT_THAT(refused.message(), HasSubstr("3145728 of 4194304 bytes in use"));
  // Another core of the session, and another session on the same core, are
  // not capped.
  EXPECT_TRUE(session->Allocate(1, 8 * kMiB).ok());
  EXPECT_TRUE(other->Allocate(0, 8 * kMiB).ok());
  // Freeing gives the room back.
  ASSERT_TRUE(session->Free(*first).ok());
  EXPECT_TRUE(session->Allocate(0, 4 * kMiB).ok());
}

TEST_F(DataPlaneTest, MemoryCapOfZeroAdmitsNothingAndNoCapRemovesIt) {
  auto session = Open();
  ASSERT_TRUE(session->SetMemoryCap(0, 0).ok());
  EXPECT_EQ(session->Allocate(0, 1).status().code(), absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(session->SetMemoryCap(0, std::nullopt).ok());
  EXPECT_TRUE(session->Allocate(0, kMiB).ok());
}

TEST_F(DataPlaneTest, MemoryCapBelowWhatIsHeldKeepsTheSegments) {
  auto session = Open();
  auto held = session->Allocate(0, 8 * kMiB);
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(session->SetMemoryCap(0, kMiB).ok());
  EXPECT_EQ(session->Allocate(0, kMiB).status().code(), absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(session->Free(*held).ok());
  EXPECT_TRUE(session->Allocate(0, kMiB).ok());
}

TEST_F(DataPlaneTest, MemoryCapRefusesHostileValues) {
  auto session = Open();
  absl::Status foreign = session->SetMemoryCap(std::numeric_limits<uint32_t>::max(), kMiB);
  EXPECT_EQ(foreign.code(), absl::StatusCode::kInvalidArgument) << foreign;
  EXPECT_THAT(foreign.message(), HasSubstr("is not one of session"));
  ASSERT_TRUE(session->SetMemoryCap(0, std::numeric_limits<uint64_t>::max()).ok());
  EXPECT_TRUE(session->Allocate(0, kMiB).ok());
  ASSERT_TRUE(session->SetMemoryCap(0, 2 * kMiB).ok());
  // A size past the cap by any amount, without overflowing the sum.
  EXPECT_EQ(session->Allocate(0, std::numeric_limits<uint64_t>::max()).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(session->Allocate(0, kMiB).ok());
}

TEST_F(DataPlaneTest, ConcurrentAllocationsNeverTogetherPassTheCap) {
  auto session = Open();
  constexpr uint64_t kCap = 16 * kMiB;
  ASSERT_TRUE(session->SetMemoryCap(0, kCap).ok());
  std::mutex mutex;
  std::vector<neuronrt::DeviceBuffer> granted;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 12; ++i) {
        auto buffer = session->Allocate(0, kMiB);
        if (!buffer.ok()) {
          EXPECT_EQ(buffer.status().code(), absl::StatusCode::kResourceExhausted);
          continue;
        }
        std::lock_guard<std::mutex> lock(mutex);
        granted.push_back(*buffer);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(granted.size(), kCap / kMiB);
  for (const neuronrt::DeviceBuffer& buffer : granted) ASSERT_TRUE(session->Free(buffer).ok());
  EXPECT_TRUE(session->Allocate(0, kCap).ok());
}

}  // namespace
}  // namespace neuron

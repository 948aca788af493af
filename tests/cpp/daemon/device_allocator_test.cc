#include "daemon/memory/device_allocator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "daemon/hal/sim/sim_backend.h"
#include "daemon/memory/memory_manager.h"

namespace neuron::rtd::memory {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

class DeviceAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = hal::sim::CreateSimBackend({.preset = "dev"}, DefaultOsSysCalls());
    ASSERT_TRUE(backend.ok());
    backend_ = *std::move(backend);
  }
  hal::Device& device() { return *backend_->devices()[0]; }
  std::unique_ptr<hal::sim::SimBackend> backend_;
};

TEST_F(DeviceAllocatorTest, AllocatesPageAlignedRangesInsideHbm) {
  DeviceAllocator allocator(device());
  absl::StatusOr<hal::DeviceRange> range = allocator.Allocate(1, 0);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->size, hal::kHbmPageBytes);
  EXPECT_EQ(range->address, device().hbm().address);
  EXPECT_EQ(allocator.stats().used_bytes, hal::kHbmPageBytes);
  EXPECT_EQ(allocator.stats().segments, 1u);
  ASSERT_TRUE(allocator.Free(*range).ok());
  EXPECT_EQ(allocator.stats().used_bytes, 0u);
}

TEST_F(DeviceAllocatorTest, OutOfMemoryNamesRequestedAndFreeBytes) {
  DeviceAllocator allocator(device());
  ASSERT_TRUE(allocator.Allocate(3 * kGiB, 0).ok());
  absl::StatusOr<hal::DeviceRange> too_big = allocator.Allocate(2 * kGiB, 0);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(too_big.status().message(),
              AllOf(HasSubstr("requested 2147483648 bytes"), HasSubstr("1073741824 bytes free")));
  EXPECT_EQ(allocator.Allocate(8 * kGiB, 0).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(allocator.Allocate(0, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(DeviceAllocatorTest, FreedNeighboursMergeSoFragmentationHeals) {
  DeviceAllocator allocator(device());
  std::vector<hal::DeviceRange> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(*allocator.Allocate(kGiB, 0));
  EXPECT_EQ(allocator.stats().largest_free_bytes, 0u);
  ASSERT_TRUE(allocator.Free(blocks[0]).ok());
  ASSERT_TRUE(allocator.Free(blocks[2]).ok());
  // Two free gigabytes, but not in one piece.
  EXPECT_EQ(allocator.Allocate(2 * kGiB, 0).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(allocator.stats().largest_free_bytes, kGiB);
  ASSERT_TRUE(allocator.Free(blocks[1]).ok());
  EXPECT_EQ(allocator.stats().largest_free_bytes, 3 * kGiB);
  absl::StatusOr<hal::DeviceRange> merged = allocator.Allocate(3 * kGiB, 0);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->address, blocks[0].address);
}

TEST_F(DeviceAllocatorTest, BestFitPicksTheSmallestHoleThatFits) {
  DeviceAllocator allocator(device());
  auto a = *allocator.Allocate(4 * kMiB, 0);
  auto b = *allocator.Allocate(kMiB, 0);
  auto c = *allocator.Allocate(kMiB, 0);
  auto d = *allocator.Allocate(kMiB, 0);
  ASSERT_TRUE(allocator.Free(a).ok());  // 4 MiB hole
  ASSERT_TRUE(allocator.Free(c).ok());  // 1 MiB hole
  absl::StatusOr<hal::DeviceRange> small = allocator.Allocate(kMiB, 0);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->address, c.address);
  (void)b;
  (void)d;
}

TEST_F(DeviceAllocatorTest, DoubleFreeIsReportedNotApplied) {
  DeviceAllocator allocator(device());
  auto range = *allocator.Allocate(kMiB, 0);
  ASSERT_TRUE(allocator.Free(range).ok());
  EXPECT_EQ(allocator.Free(range).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(allocator.stats().used_bytes, 0u);
}

TEST_F(DeviceAllocatorTest, SegmentsReturnTheirMemoryWhenTheLastHolderLetsGo) {
  MemoryManager memory(*backend_);
  absl::StatusOr<SegmentRef> segment = memory.Allocate(0, 0, kMiB);
  ASSERT_TRUE(segment.ok());
  SegmentTable table;
  table.Insert(*segment);
  SegmentRef queued_command = *segment;  // a command still holds it
  segment->reset();
  ASSERT_TRUE(table.Remove(queued_command->id()).ok());
  EXPECT_EQ(memory.stats(0).used_bytes, kMiB) << "still held by the queued command";
  queued_command.reset();
  EXPECT_EQ(memory.stats(0).used_bytes, 0u);
}

TEST_F(DeviceAllocatorTest, SegmentTableResolvesOnlyWholeRangesItOwns) {
  MemoryManager memory(*backend_);
  SegmentTable table;
  SegmentRef mine = *memory.Allocate(0, 0, kMiB);
  SegmentRef theirs = *memory.Allocate(0, 0, kMiB);
  table.Insert(mine);
  const uint64_t base = mine->range().address;
  EXPECT_TRUE(table.Resolve(base, kMiB).ok());
  EXPECT_TRUE(table.Resolve(base + kMiB - 1, 1).ok());
  EXPECT_THAT(table.Resolve(base + kMiB - 1, 2).status().message(),
              HasSubstr("runs 1 bytes past the end of segment"));
  EXPECT_THAT(table.Resolve(theirs->range().address, 4).status().message(),
              HasSubstr("not inside any segment of this session"));
  EXPECT_FALSE(table.Resolve(base - 1, 1).ok());
  EXPECT_EQ(table.bytes(), kMiB);
  EXPECT_EQ(table.Remove(12345).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace neuron::rtd::memory

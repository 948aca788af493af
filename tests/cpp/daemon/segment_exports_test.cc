// SegmentExports alone: handles, who may redeem them, and what they keep.
#include "daemon/memory/segment_exports.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_format.h"
#include "daemon/hal/sim/sim_backend.h"
#include "daemon/memory/memory_manager.h"

namespace neuron::rtd::memory {
namespace {

using ::testing::HasSubstr;

class SegmentExportsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = hal::sim::CreateSimBackend({.preset = "dev"}, DefaultOsSysCalls());
    ASSERT_TRUE(backend.ok());
    backend_ = *std::move(backend);
    memory_ = std::make_unique<MemoryManager>(*backend_);
  }

  SegmentRef Allocate() { return *memory_->Allocate(0, 0, 1 << 20); }

  // Handles "h0000…", "h0001…": distinct and predictable.
  SegmentExports::HandleSource Counter() {
    return [this]() -> absl::StatusOr<std::string> {
      std::string handle = absl::StrFormat("h%015d", next_handle_++);
      return handle;
    };
  }

  const SegmentOwner alice_{.uid = 1000};
  const SegmentOwner bob_{.uid = 1001};
  const SegmentOwner alice_in_grant_{.uid = 1000, .grant = "g1"};
  int next_handle_ = 0;
  std::unique_ptr<hal::sim::SimBackend> backend_;
  std::unique_ptr<MemoryManager> memory_;
};

TEST_F(SegmentExportsTest, OneHandlePerSegmentRedeemedByItsOwner) {
  SegmentExports exports(Counter());
  SegmentRef segment = Allocate();
  SegmentRef other = Allocate();
  const std::string handle = *exports.Export(segment, 3, alice_);
  EXPECT_EQ(handle.size(), kSegmentHandleBytes);
  EXPECT_EQ(*exports.Export(segment, 3, alice_), handle);
  EXPECT_NE(*exports.Export(other, 3, alice_), handle);
  absl::StatusOr<ExportedSegment> redeemed = exports.Redeem(handle, alice_);
  ASSERT_TRUE(redeemed.ok()) << redeemed.status();
  EXPECT_EQ(redeemed->segment, segment);
  EXPECT_EQ(redeemed->core, 3u);
  EXPECT_EQ(exports.size(), 2u);
}

TEST_F(SegmentExportsTest, AnotherUserOrGrantIsRefused) {
  SegmentExports exports(Counter());
  SegmentRef segment = Allocate();
  const std::string handle = *exports.Export(segment, 0, alice_);
  absl::Status foreign = exports.Redeem(handle, bob_).status();
  EXPECT_EQ(foreign.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(foreign.message(), HasSubstr("belongs to uid 1000; uid 1001 may not use it"));
  absl::Status contained = exports.Redeem(handle, alice_in_grant_).status();
  EXPECT_EQ(contained.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(contained.message(), HasSubstr("within grant g1"));
}

TEST_F(SegmentExportsTest, AHandleKeepsNothingAlive) {
  SegmentExports exports(Counter());
  SegmentRef segment = Allocate();
  const std::string handle = *exports.Export(segment, 0, alice_);
  segment.reset();
  absl::Status stale = exports.Redeem(handle, alice_).status();
  EXPECT_EQ(stale.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(memory_->stats(0).used_bytes, 0u);
}

TEST_F(SegmentExportsTest, MalformedAndUnknownHandlesAreRefused) {
  SegmentExports exports(Counter());
  EXPECT_EQ(exports.Redeem("", alice_).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(exports.Redeem(std::string(17, 'h'), alice_).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(exports.Redeem(std::string(16, 'h'), alice_).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(SegmentExportsTest, AFullRegistryDropsTheHandlesOfFreedSegmentsFirst) {
  SegmentExports exports(Counter(), /*max_entries=*/2);
  SegmentRef first = Allocate();
  SegmentRef second = Allocate();
  ASSERT_TRUE(exports.Export(first, 0, alice_).ok());
  const std::string kept = *exports.Export(second, 0, alice_);
  SegmentRef third = Allocate();
  absl::Status full = exports.Export(third, 0, alice_).status();
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.message(), HasSubstr("2 segments are shared already"));
  first.reset();
  EXPECT_TRUE(exports.Export(third, 0, alice_).ok());
  EXPECT_EQ(exports.size(), 2u);
  EXPECT_TRUE(exports.Redeem(kept, alice_).ok());
}

TEST_F(SegmentExportsTest, AFailingHandleSourceFailsTheExport) {
  SegmentExports exports([]() -> absl::StatusOr<std::string> {
    return absl::UnavailableError("no entropy");
  });
  EXPECT_EQ(exports.Export(Allocate(), 0, alice_).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(exports.size(), 0u);
}

}  // namespace
}  // namespace neuron::rtd::memory

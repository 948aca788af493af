// The bound on the host memory of one launch's CPU kernels.
#include "daemon/hal/sim/launch_host_budget.h"

#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <thread>

namespace neuron::rtd::hal::sim {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMiB = 1 << 20;

at::Tensor Bytes(int64_t bytes) { return at::empty({bytes}, at::kByte); }

TEST(LaunchHostBudgetTest, AnAllocationPastTheLimitThrowsOutOfMemory) {
  LaunchHostBudget budget(4 * kMiB);
  at::Tensor kept = Bytes(3 * kMiB);
  try {
    Bytes(2 * kMiB);
    FAIL() << "allocated past the budget";
  } catch (const c10::OutOfMemoryError& error) {
    EXPECT_THAT(error.what_without_backtrace(),
                HasSubstr("bounds one launch to 4194304 bytes ([sim] max_launch_host_bytes)"));
  }
  EXPECT_GE(budget.peak_bytes(), static_cast<uint64_t>(3 * kMiB));
  EXPECT_LT(budget.peak_bytes(), static_cast<uint64_t>(4 * kMiB));
}

TEST(LaunchHostBudgetTest, FreedMemoryIsGivenBack) {
  LaunchHostBudget budget(4 * kMiB);
  for (int i = 0; i < 16; ++i) EXPECT_NO_THROW(Bytes(3 * kMiB));
}

TEST(LaunchHostBudgetTest, OnlyAllocationsInsideAScopeOnItsThreadCount) {
  at::Tensor before = Bytes(8 * kMiB);
  {
    LaunchHostBudget budget(4 * kMiB);
    std::optional<at::Tensor> other;
    std::thread([&] { other = Bytes(8 * kMiB); }).join();
    EXPECT_TRUE(other.has_value());
    EXPECT_EQ(budget.peak_bytes(), 0u);
  }
  EXPECT_NO_THROW(Bytes(8 * kMiB));
}

TEST(LaunchHostBudgetTest, MemoryOutlivingItsScopeIsReturnedLater) {
  at::Tensor survivor;
  {
    LaunchHostBudget budget(4 * kMiB);
    survivor = Bytes(2 * kMiB);
  }
  survivor = at::Tensor();
  LaunchHostBudget next(4 * kMiB);
  EXPECT_NO_THROW(Bytes(3 * kMiB));
}

}  // namespace
}  // namespace neuron::rtd::hal::sim

#include "daemon/common/decaying_sum.h"

#include <gtest/gtest.h>

namespace neuron::rtd {
namespace {

constexpr double kSecond = 1e9;

TEST(DecayingSumTest, ASteadyRateConvergesToRateTimesWindow) {
  DecayingSum sum(5 * kSecond);
  // Half of every millisecond busy, for a minute.
  for (int64_t t = 1; t <= 60'000; ++t) sum.Add(t * 1'000'000, 500'000);
  EXPECT_NEAR(sum.ValueAt(60'000'000'000) / sum.window_ns(), 0.5, 0.01);
}

TEST(DecayingSumTest, OldTermsFade) {
  DecayingSum sum(5 * kSecond);
  sum.Add(1, 1e9);
  EXPECT_NEAR(sum.ValueAt(1), 1e9, 1);
  EXPECT_NEAR(sum.ValueAt(1 + static_cast<int64_t>(5 * kSecond)), 1e9 / 2.718281828, 1e3);
  EXPECT_LT(sum.ValueAt(1 + static_cast<int64_t>(60 * kSecond)), 1e4);
  // A time that goes back is taken as the latest seen.
  sum.Add(0, 1);
  EXPECT_NEAR(sum.ValueAt(1), 1e9 + 1, 1);
}

}  // namespace
}  // namespace neuron::rtd

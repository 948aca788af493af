// Reductions of the partial results other hosts send, and the 16-bit
// float conversions they round through.
#include "daemon/collectives/host_reduce.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace neuron::rtd::collectives {
namespace {

TEST(HostReduceTest, HalfConversionsRoundToNearestEven) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -26)), 0x0000);  // below half of it
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to even (1).
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(NAN))));
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(bits))), bits) << bits;
  }
}

TEST(HostReduceTest, BFloat16ConversionsRoundToNearestEven) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(BFloat16ToFloat(0x3f80), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to even.
  EXPECT_EQ(FloatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(NAN))));
}

TEST(HostReduceTest, FloatOps) {
  std::vector<float> into = {1, 5, -3, 2};
  const std::vector<float> from = {2, 4, -1, 0.5};
  ReduceOnHost(hal::ReduceOp::kSum, hal::ElementType::kFloat32, into.data(), from.data(), 4);
  EXPECT_EQ(into, (std::vector<float>{3, 9, -4, 2.5}));
  ReduceOnHost(hal::ReduceOp::kMax, hal::ElementType::kFloat32, into.data(), from.data(), 4);
  EXPECT_EQ(into, (std::vector<float>{3, 9, -1, 2.5}));
  ReduceOnHost(hal::ReduceOp::kMin, hal::ElementType::kFloat32, into.data(), from.data(), 4);
  EXPECT_EQ(into, (std::vector<float>{2, 4, -1, 0.5}));
  ReduceOnHost(hal::ReduceOp::kProduct, hal::ElementType::kFloat32, into.data(), from.data(), 4);
  EXPECT_EQ(into, (std::vector<float>{4, 16, 1, 0.25}));
  // AVG and PREMUL_SUM combine as sums, then finish once.
  ReduceOnHost(hal::ReduceOp::kAvg, hal::ElementType::kFloat32, into.data(), from.data(), 4);
  FinishOnHost(hal::ReduceOp::kAvg, hal::ElementType::kFloat32, into.data(), 4, 2, 0);
  EXPECT_EQ(into, (std::vector<float>{3, 10, 0, 0.375}));
  FinishOnHost(hal::ReduceOp::kPremulSum, hal::ElementType::kFloat32, into.data(), 4, 2, 0.5);
  EXPECT_EQ(into, (std::vector<float>{1.5, 5, 0, 0.1875}));
  FinishOnHost(hal::ReduceOp::kSum, hal::ElementType::kFloat32, into.data(), 4, 2, 0.5);
  EXPECT_EQ(into, (std::vector<float>{1.5, 5, 0, 0.1875}));
  // NaN wins MIN and MAX, as on the device.
  std::vector<float> nan = {NAN};
  const std::vector<float> one = {1};
  ReduceOnHost(hal::ReduceOp::kMax, hal::ElementType::kFloat32, nan.data(), one.data(), 1);
  EXPECT_TRUE(std::isnan(nan[0]));
}

TEST(HostReduceTest, NarrowFloatsRoundEachOperation) {
  std::vector<uint16_t> into = {FloatToBFloat16(256.0f)};
  const std::vector<uint16_t> from = {FloatToBFloat16(1.0f)};
  // 257 is not a bfloat16: the sum rounds to even (256).
  ReduceOnHost(hal::ReduceOp::kSum, hal::ElementType::kBFloat16, into.data(), from.data(), 1);
  EXPECT_EQ(BFloat16ToFloat(into[0]), 256.0f);
  std::vector<uint16_t> half = {FloatToHalf(3.0f)};
  const std::vector<uint16_t> half_from = {FloatToHalf(1.5f)};
  ReduceOnHost(hal::ReduceOp::kProduct, hal::ElementType::kFloat16, half.data(), half_from.data(),
               1);
  EXPECT_EQ(HalfToFloat(half[0]), 4.5f);
  FinishOnHost(hal::ReduceOp::kAvg, hal::ElementType::kFloat16, half.data(), 1, 3, 0);
  EXPECT_EQ(HalfToFloat(half[0]), 1.5f);
}

TEST(HostReduceTest, IntegersWrapAndAveragesTruncateTowardZero) {
  std::vector<int8_t> into = {127, -128, 5};
  const std::vector<int8_t> from = {1, -1, -12};
  ReduceOnHost(hal::ReduceOp::kSum, hal::ElementType::kInt8, into.data(), from.data(), 3);
  EXPECT_EQ(into, (std::vector<int8_t>{-128, 127, -7}));
  FinishOnHost(hal::ReduceOp::kAvg, hal::ElementType::kInt8, into.data(), 3, 2, 0);
  EXPECT_EQ(into, (std::vector<int8_t>{-64, 63, -3}));
  std::vector<uint8_t> bytes = {200, 3};
  const std::vector<uint8_t> factors = {2, 7};
  ReduceOnHost(hal::ReduceOp::kProduct, hal::ElementType::kUInt8, bytes.data(), factors.data(), 2);
  EXPECT_EQ(bytes, (std::vector<uint8_t>{144, 21}));
  std::vector<int64_t> wide = {std::numeric_limits<int64_t>::max(), -4};
  const std::vector<int64_t> wide_from = {1, 9};
  ReduceOnHost(hal::ReduceOp::kSum, hal::ElementType::kInt64, wide.data(), wide_from.data(), 2);
  EXPECT_EQ(wide[0], std::numeric_limits<int64_t>::min());
  ReduceOnHost(hal::ReduceOp::kMin, hal::ElementType::kInt64, wide.data(), wide_from.data(), 2);
  EXPECT_EQ(wide, (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 5}));
  std::vector<int32_t> ints = {-3, 8};
  const std::vector<int32_t> ints_from = {4, 2};
  ReduceOnHost(hal::ReduceOp::kMax, hal::ElementType::kInt32, ints.data(), ints_from.data(), 2);
  EXPECT_EQ(ints, (std::vector<int32_t>{4, 8}));
}

TEST(HostReduceTest, MisalignedBuffersReduceAsAlignedOnes) {
  alignas(8) uint8_t into[1 + 3 * sizeof(float)];
  alignas(8) uint8_t from[2 + 3 * sizeof(float)];
  const float into_values[3] = {1, 2, 3};
  const float from_values[3] = {10, 20, 30};
  std::memcpy(into + 1, into_values, sizeof(into_values));
  std::memcpy(from + 2, from_values, sizeof(from_values));
  ReduceOnHost(hal::ReduceOp::kSum, hal::ElementType::kFloat32, into + 1, from + 2, 3);
  float got[3];
  std::memcpy(got, into + 1, sizeof(got));
  EXPECT_EQ(got[0], 11);
  EXPECT_EQ(got[1], 22);
  EXPECT_EQ(got[2], 33);
}

TEST(HostReduceTest, BooleansAreLogical) {
  std::vector<uint8_t> into = {0, 1, 1, 0};
  const std::vector<uint8_t> from = {0, 0, 1, 1};
  std::vector<uint8_t> either = into;
  ReduceOnHost(hal::ReduceOp::kSum, hal::ElementType::kBool, either.data(), from.data(), 4);
  EXPECT_EQ(either, (std::vector<uint8_t>{0, 1, 1, 1}));
  ReduceOnHost(hal::ReduceOp::kMin, hal::ElementType::kBool, into.data(), from.data(), 4);
  EXPECT_EQ(into, (std::vector<uint8_t>{0, 0, 1, 0}));
}

}  // namespace
}  // namespace neuron::rtd::collectives

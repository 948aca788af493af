// The PyTorch toolchain proven end to end: an ATen CPU kernel runs on
// tensors that live in simulated HBM.
#include "daemon/hal/sim/aten_memory.h"

#include <ATen/ops/add.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/full.h>
#include <gtest/gtest.h>

#include "daemon/hal/sim/sim_backend.h"

namespace neuron::rtd::hal::sim {
namespace {

TEST(AtenMemoryTest, AddRunsOnTensorsInHbm) {
  absl::StatusOr<std::unique_ptr<SimBackend>> backend =
      CreateSimBackend({.preset = "dev"}, DefaultOsSysCalls());
  ASSERT_TRUE(backend.ok()) << backend.status();
  SimDevice& device = (*backend)->sim_device(0);
  const uint64_t base = device.hbm().address;
  ASSERT_TRUE(device.Acquire({base, 3 * kHbmPageBytes}, 0).ok());

  const uint64_t a_address = base;
  const uint64_t b_address = base + kHbmPageBytes;
  const uint64_t out_address = base + 2 * kHbmPageBytes;
  absl::StatusOr<at::Tensor> a = WrapHbm(device.arena(), a_address, {16, 16}, at::kFloat);
  absl::StatusOr<at::Tensor> b = WrapHbm(device.arena(), b_address, {16, 16}, at::kFloat);
  absl::StatusOr<at::Tensor> out = WrapHbm(device.arena(), out_address, {16, 16}, at::kFloat);
  ASSERT_TRUE(a.ok() && b.ok() && out.ok());
  a->copy_(at::arange(256, at::kFloat).reshape({16, 16}));
  b->copy_(at::full({16, 16}, 0.5f));

  at::add_out(*out, *a, *b, /*alpha=*/2);

  // Read the result back through the raw HBM, not through the tensor.
  const float* raw = static_cast<const float*>(*device.arena().HostPointer(out_address, 1024));
  for (int i = 0; i < 256; ++i) ASSERT_FLOAT_EQ(raw[i], static_cast<float>(i) + 1.0f) << i;
  EXPECT_EQ(out->data_ptr(), *device.arena().HostPointer(out_address, 1024));
}

TEST(AtenMemoryTest, TensorPastTheEndOfHbmIsRefused) {
  absl::StatusOr<std::unique_ptr<SimBackend>> backend =
      CreateSimBackend({.preset = "dev"}, DefaultOsSysCalls());
  ASSERT_TRUE(backend.ok());
  SimDevice& device = (*backend)->sim_device(0);
  const uint64_t last = device.hbm().end() - 4;
  EXPECT_TRUE(WrapHbm(device.arena(), last, {1}, at::kFloat).ok());
  EXPECT_EQ(WrapHbm(device.arena(), last, {2}, at::kFloat).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(WrapHbm(device.arena(), last, {-1}, at::kFloat).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WrapHbm(device.arena(), last, {int64_t{1} << 62, 16}, at::kFloat).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace neuron::rtd::hal::sim

#include "daemon/hal/sim/aten_kernels.h"

#include <ATen/ops/add.h>

#include <cstring>

#include "absl/strings/str_format.h"
#include "daemon/hal/sim/aten_memory.h"

namespace neuron::rtd::hal::sim {

absl::Status RunAddF32(HbmArena& arena, std::span<const uint64_t> arguments,
                       std::span<const uint8_t> scalars) {
  if (arguments.size() != 3 || scalars.size() != sizeof(uint64_t)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "builtin add_f32 takes 3 arguments and an 8-byte element count, got %d and %d bytes",
        arguments.size(), scalars.size()));
  }
  uint64_t count = 0;
  std::memcpy(&count, scalars.data(), sizeof(count));
  if (count > static_cast<uint64_t>(INT64_MAX)) {
    return absl::InvalidArgumentError(absl::StrFormat("element count %d is too large", count));
  }
  const int64_t sizes[] = {static_cast<int64_t>(count)};
  absl::StatusOr<at::Tensor> a = WrapHbm(arena, arguments[0], sizes, at::kFloat);
  if (!a.ok()) return a.status();
  absl::StatusOr<at::Tensor> b = WrapHbm(arena, arguments[1], sizes, at::kFloat);
  if (!b.ok()) return b.status();
  absl::StatusOr<at::Tensor> out = WrapHbm(arena, arguments[2], sizes, at::kFloat);
  if (!out.ok()) return out.status();
  try {
    at::add_out(*out, *a, *b);
  } catch (const std::exception& error) {
    return absl::InternalError(absl::StrFormat("add_f32: %s", error.what()));
  }
  return absl::OkStatus();
}

}  // namespace neuron::rtd::hal::sim

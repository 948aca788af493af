#include "daemon/hal/sim/aten_kernels.h"

#include <ATen/ops/add.h>

#include <cstring>

#include "absl/strings/str_format.h"
#include "daemon/hal/sim/aten_memory.h"

namespace neuron::rtd::hal::sim {

absl::Status RunAddF32(HbmArena& arena, std::span<const uint64_t> arguments,
                       std::span<const uint8_t> scalars) {
  absl::StatusOr<uint64_t> count = BuiltinAddF32Count(arguments, scalars);
  if (!count.ok()) return count.status();
  const int64_t sizes[] = {static_cast<int64_t>(*count)};
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

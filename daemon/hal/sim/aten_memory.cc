#include "daemon/hal/sim/aten_memory.h"

#include <ATen/ops/from_blob.h>
#include <c10/util/safe_numerics.h>

#include "absl/strings/str_format.h"

namespace neuron::rtd::hal::sim {

absl::StatusOr<at::Tensor> WrapHbm(HbmArena& arena, uint64_t address, at::IntArrayRef sizes,
                                   at::ScalarType dtype) {
  uint64_t elements = 1;
  for (int64_t size : sizes) {
    if (size < 0 || c10::mul_overflows(elements, static_cast<uint64_t>(size), &elements)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("tensor sizes %s are negative or overflow", c10::str(sizes)));
    }
  }
  uint64_t bytes = 0;
  if (c10::mul_overflows(elements, static_cast<uint64_t>(c10::elementSize(dtype)), &bytes)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("tensor of sizes %s overflows the address space", c10::str(sizes)));
  }
  absl::StatusOr<void*> host = arena.HostPointer(address, bytes);
  if (!host.ok()) return host.status();
  return at::from_blob(*host, sizes, at::TensorOptions().dtype(dtype).device(at::kCPU));
}

}  // namespace neuron::rtd::hal::sim

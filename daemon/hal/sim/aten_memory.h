// Views of simulated HBM as ATen CPU tensors: how the sim backend runs its
// kernels (ATen CPU kernels) directly on device memory, without copies.
// This is the only part of the daemon that includes PyTorch headers.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_ATEN_MEMORY_H_
#define NEURON_RTD_DAEMON_HAL_SIM_ATEN_MEMORY_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "daemon/hal/sim/hbm_arena.h"

namespace neuron::rtd::hal::sim {

// A contiguous CPU tensor of `sizes` and `dtype` over the HBM at `address`.
// The tensor does not own the memory: the caller keeps the range committed
// while the tensor (or any view of it) is in use. OUT_OF_RANGE when the
// tensor would not fit inside the device's HBM.
absl::StatusOr<at::Tensor> WrapHbm(HbmArena& arena, uint64_t address, at::IntArrayRef sizes,
                                   at::ScalarType dtype);

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_ATEN_MEMORY_H_

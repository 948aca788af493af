// The sim's built-in kernels: ATen CPU kernels on tensors that wrap HBM.
// Declared without PyTorch types so that callers need no PyTorch headers.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_ATEN_KERNELS_H_
#define NEURON_RTD_DAEMON_HAL_SIM_ATEN_KERNELS_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "daemon/hal/reduction.h"
#include "daemon/hal/sim/hbm_arena.h"
#include "daemon/hal/sim/arena_operand.h"

namespace neuron::rtd::hal::sim {

// The built-in float32 add (Device::RunAddF32): arguments a, b, out; scalars: a uint64_t
// element count.
absl::Status RunAddF32(HbmArena& arena, std::span<const uint64_t> arguments,
                       std::span<const uint8_t> scalars);

// The collective engine's reduction (Device::Reduce) over arenas: every
// source into `destination` of `destination_arena`, which may be
// sources[0] and no other source.
absl::Status ReduceInArenas(const Reduction& reduction, HbmArena& destination_arena,
                            uint64_t destination, std::span<const ArenaOperand> sources);

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_ATEN_KERNELS_H_

// A reduction's operand in an HbmArena: shared by the sim's kernels and the
// host mirror of the nrt backend.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_ARENA_OPERAND_H_
#define NEURON_RTD_DAEMON_HAL_SIM_ARENA_OPERAND_H_

#include <cstdint>

#include "daemon/hal/sim/hbm_arena.h"

namespace neuron::rtd::hal::sim {

// Memory of a reduction's operand in an arena (a sim device's HBM, or the
// host mirror of another backend's).
struct ArenaOperand {
  HbmArena* arena = nullptr;
  uint64_t address = 0;
};

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_ARENA_OPERAND_H_

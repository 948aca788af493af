// The engines of a NeuronCore, for profiling: which one did a command's work.
#ifndef NEURON_RTD_DAEMON_HAL_ENGINE_H_
#define NEURON_RTD_DAEMON_HAL_ENGINE_H_

#include <cstdint>

namespace neuron::rtd::hal {

// The values of neuron.rtd.v1.Engine.
enum class Engine : uint8_t {
  kUnspecified = 0,  // a compiled graph: many operators, several engines
  kTensor = 1,
  kVector = 2,
  kScalar = 3,
  kGpSimd = 4,
  kDma = 5,
  kCollective = 6,
  kSync = 7,
  kHost = 8,  // the host CPU: a launch the core could not run (nrt: no NEFF)
};

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_ENGINE_H_

// NEFF executables: programs the Neuron compiler made, which only real
// Trainium runs (the nrt backend loads them with nrt_load). What the HAL gets
// from daemon/exec (the checked bytes) and what a backend reports back about
// a loaded NEFF (its input and output tensors, from the runtime).
#ifndef NEURON_RTD_DAEMON_HAL_NEFF_H_
#define NEURON_RTD_DAEMON_HAL_NEFF_H_

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/hal/executable.h"

namespace neuron::rtd::hal {

// A tensor a NEFF reads or writes. A LAUNCH passes one address per tensor,
// in this order.
struct NeffTensor {
  std::string name;
  bool input = true;
  uint64_t size_bytes = 0;
  std::vector<uint32_t> shape;
  // c10::ScalarType number; -1 when the runtime names a type PyTorch lacks.
  int32_t dtype = -1;
};

// A prepared NEFF. Its tensors are known once the backend has loaded it.
class NeffExecutable : public Executable {
 public:
  virtual const std::vector<NeffTensor>& tensors() const = 0;
};

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_NEFF_H_

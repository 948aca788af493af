// NKI kernels on the sim: the plan run by the NKI interpreter on the
// launching core's SBUF and PSUM and on the session's HBM.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_NKI_NKI_EXECUTABLE_H_
#define NEURON_RTD_DAEMON_HAL_SIM_NKI_NKI_EXECUTABLE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "daemon/hal/nki_kernel.h"
#include "daemon/hal/sim/sim_executable.h"

namespace neuron::rtd::hal::sim {

// `plan` was checked by daemon/exec (CheckNkiKernel). Each core's worker
// thread keeps its own SBUF and PSUM (a core runs one kernel at a time), so
// launches on several cores run at once. A launch whose operands disagree
// fails as an operator error (ValueError) naming the instruction and the
// kernel's source line; the stream goes on.
absl::StatusOr<std::unique_ptr<SimExecutable>> PrepareNkiExecutable(const NkiKernelPlan& plan);

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_NKI_NKI_EXECUTABLE_H_

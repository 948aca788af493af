// Eager-op executables on the sim: an ATen operator resolved and checked
// against its schema once, at load, then called through the dispatcher on
// CPU tensors that wrap HBM. Each result is copied into its output tensor;
// a result the CPU kernel leaves undefined or empty where the executable has
// a non-empty output (saved statistics that eval-mode batch norm does not
// compute) leaves that output's contents unspecified, as on an accelerator
// whose kernel allocates them and never writes them, and a non-empty result
// for an empty output (embedding_bag's max_indices outside max mode) is
// dropped. Results of other sizes fail the call as an operator error (the
// stream goes on). Indices that some CPU kernels follow unchecked are
// checked first (internal/index_guards.h).
#ifndef NEURON_RTD_DAEMON_HAL_SIM_ATEN_EXECUTABLE_H_
#define NEURON_RTD_DAEMON_HAL_SIM_ATEN_EXECUTABLE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "daemon/hal/eager_op.h"
#include "daemon/hal/sim/sim_executable.h"

namespace neuron::rtd::hal::sim {

// Resolves the operator and checks every argument of `plan` against its
// schema: the count (missing trailing arguments take the schema's
// defaults), each value's kind against the declared type, each immediate's
// kind. INVALID_ARGUMENT naming the operator and the argument otherwise,
// and for an operator ATen does not have.
absl::StatusOr<std::unique_ptr<SimExecutable>> PrepareAtenExecutable(const EagerOpPlan& plan);

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_ATEN_EXECUTABLE_H_

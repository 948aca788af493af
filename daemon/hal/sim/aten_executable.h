// Eager-op executables on the sim: an ATen operator resolved and checked
// against its schema once, at load, then called through the dispatcher on
// CPU tensors that wrap HBM. Declared without PyTorch types so that callers
// need no PyTorch headers.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_ATEN_EXECUTABLE_H_
#define NEURON_RTD_DAEMON_HAL_SIM_ATEN_EXECUTABLE_H_

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "daemon/hal/executable.h"
#include "daemon/hal/sim/hbm_arena.h"

namespace neuron::rtd::hal::sim {

// Resolves the operator and checks every argument of `spec` against its
// schema: the count (missing trailing arguments take the schema's
// defaults), each value's kind against the declared type, each immediate's
// kind. INVALID_ARGUMENT naming the operator and the argument otherwise,
// and for an operator ATen does not have.
absl::StatusOr<std::unique_ptr<Executable>> PrepareAtenExecutable(const ExecutableSpec& spec);

// Runs an executable PrepareAtenExecutable made. Each result is copied into
// its output tensor; a result the CPU kernel leaves undefined or empty where
// the executable has a non-empty output (saved statistics that eval-mode
// batch norm does not compute) leaves that output's contents unspecified,
// as on an accelerator whose kernel allocates them and never writes them.
// The operator's own errors come back as INVALID_ARGUMENT (or
// RESOURCE_EXHAUSTED) carrying kOperatorErrorTypePayload; so does a kernel
// that asks for more than `max_host_bytes` of host memory at once
// (LaunchHostBudget).
absl::Status DispatchAtenExecutable(HbmArena& arena, const Executable& executable,
                                    std::span<const uint64_t> bindings,
                                    std::span<const uint8_t> immediates,
                                    uint64_t max_host_bytes);

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_ATEN_EXECUTABLE_H_

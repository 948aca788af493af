// The NKI kernel plan the HAL runs: the shared plain-data description
// (proto/neuron/rtd/nki_kernel.h), named in the HAL's namespace.
#ifndef NEURON_RTD_DAEMON_HAL_NKI_KERNEL_H_
#define NEURON_RTD_DAEMON_HAL_NKI_KERNEL_H_

#include "neuron/rtd/nki_kernel.h"

namespace neuron::rtd::hal {

using ::neuron::rtd::NkiAccess;
using ::neuron::rtd::NkiActivation;
using ::neuron::rtd::NkiAllocation;
using ::neuron::rtd::NkiAluOp;
using ::neuron::rtd::NkiDim;
using ::neuron::rtd::NkiIndirect;
using ::neuron::rtd::NkiInstruction;
using ::neuron::rtd::NkiKernelPlan;
using ::neuron::rtd::NkiOpcode;
using ::neuron::rtd::NkiSpace;
using ::neuron::rtd::NkiTarget;

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_NKI_KERNEL_H_

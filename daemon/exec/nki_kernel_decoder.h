// Decoding and checking an NKI kernel sent by a client (EXECUTABLE_KIND_NKI).
#ifndef NEURON_RTD_DAEMON_EXEC_NKI_KERNEL_DECODER_H_
#define NEURON_RTD_DAEMON_EXEC_NKI_KERNEL_DECODER_H_

#include "absl/status/statusor.h"
#include "daemon/exec/executable.h"
#include "neuron/rtd/v1/executable.pb.h"

namespace neuron::rtd::exec {

// The kernel as a plan, checked by CheckNkiKernel (every access inside its
// allocation, every tile inside SBUF or PSUM, each instruction well
// formed), with one launch tensor per HBM allocation: a launch's addresses
// are checked against the session's memory like an eager op's.
// INVALID_ARGUMENT naming the kernel and what is wrong.
absl::StatusOr<Executable> DecodeNkiKernel(const neuron::rtd::v1::NkiKernel& kernel);

// The kernel as a plan, checked by CheckNkiKernel; for a graph's kernels.
absl::StatusOr<hal::NkiKernelPlan> DecodeNkiKernelPlan(const neuron::rtd::v1::NkiKernel& kernel);

}  // namespace neuron::rtd::exec

#endif  // NEURON_RTD_DAEMON_EXEC_NKI_KERNEL_DECODER_H_

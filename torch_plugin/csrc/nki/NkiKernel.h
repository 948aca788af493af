// NKI kernels (the nki package): a traced kernel loaded into neuron-rtd once
// per host and launched with one LAUNCH on the current stream, or run in
// this process on CPU tensors by the same interpreter the daemon uses
// (nki.simulate).
#ifndef TORCH_NEURONX_CSRC_NKI_NKI_KERNEL_H_
#define TORCH_NEURONX_CSRC_NKI_NKI_KERNEL_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "neuron/rtd/nki_kernel.h"

namespace torch_neuronx {

// Loads `plan` into the daemon; its executable id. Errors as PyTorch
// exceptions (ValueError for a kernel the daemon refuses).
uint64_t LoadNkiKernel(const neuron::rtd::NkiKernelPlan& plan);

// Launches executable `executable_id` on the current stream of neuron
// device `device` with `hbm[i]` at address i (neuron tensors on `device`,
// each covering its allocation from its data pointer). Waits when `wait`
// (a first launch: its errors come at the call).
void LaunchNkiKernel(uint64_t executable_id, const neuron::rtd::NkiKernelPlan& plan,
                     const std::vector<at::Tensor>& hbm, c10::DeviceIndex device, bool wait);

// Runs `plan` here on CPU tensors `hbm` (address i at hbm[i]), checked as
// the daemon checks it. ValueError for what the interpreter refuses.
void SimulateNkiKernel(const neuron::rtd::NkiKernelPlan& plan, const std::vector<at::Tensor>& hbm);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_NKI_NKI_KERNEL_H_

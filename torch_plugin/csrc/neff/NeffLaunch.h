// Compiled NEFFs run by neuron-rtd on real Trainium (torch_neuronx.neff):
// loaded once per host through libneuronrt, launched with one LAUNCH on the
// current stream with the addresses of its tensors, in the order the
// daemon's runtime reported them.
#ifndef TORCH_NEURONX_CSRC_NEFF_NEFF_LAUNCH_H_
#define TORCH_NEURONX_CSRC_NEFF_NEFF_LAUNCH_H_

#include <ATen/core/Tensor.h>

#include <string>
#include <string_view>
#include <vector>

#include "neuronrt/session.h"

namespace torch_neuronx {

// Loads `neff` (a .neff file's bytes); errors as PyTorch exceptions.
neuronrt::Session::LoadedNeff LoadNeff(std::string_view neff, std::string_view name);

// Launches NEFF executable `executable_id` on the current stream of neuron
// device `device` with `tensors` (one per tensor of the NEFF, contiguous,
// each of the NEFF tensor's byte size). Waits for it when `wait` (a first
// launch: its errors come at the call).
void LaunchNeff(uint64_t executable_id, std::string_view name,
                const std::vector<neuronrt::Session::NeffTensor>& expected,
                const std::vector<at::Tensor>& tensors, c10::DeviceIndex device, bool wait);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_NEFF_NEFF_LAUNCH_H_

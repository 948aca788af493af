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

// Runs NEFF executable `executable_id` on the current stream of neuron
// device `device`: `inputs` (one per input of `tensors`, in order, each of
// the NEFF tensor's byte size) and fresh outputs, bound in the order of
// `tensors` (the daemon's runtime reported it). Returns the outputs, in
// order: tensors of the NEFF's shape and dtype, or its bytes (uint8) for a
// dtype PyTorch lacks. Waits for the launch when `wait` (a first launch: its
// errors come at the call).
std::vector<at::Tensor> RunNeff(uint64_t executable_id, std::string_view name,
                                const std::vector<neuronrt::Session::NeffTensor>& tensors,
                                const std::vector<at::Tensor>& inputs, c10::DeviceIndex device,
                                bool wait);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_NEFF_NEFF_LAUNCH_H_

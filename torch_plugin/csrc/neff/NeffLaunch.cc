#include "csrc/neff/NeffLaunch.h"

#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include "absl/strings/str_format.h"
#include "csrc/runtime/NeuronFunctions.h"

namespace torch_neuronx {

neuronrt::Session::LoadedNeff LoadNeff(std::string_view neff, std::string_view name) {
  absl::StatusOr<neuronrt::Session::LoadedNeff> loaded =
      GetRuntime().session().LoadNeff(neff, name);
  ThrowIfError(loaded.status(), absl::StrFormat("loading NEFF '%s' into neuron-rtd", name));
  return *std::move(loaded);
}

std::vector<at::Tensor> RunNeff(uint64_t executable_id, std::string_view name,
                                const std::vector<neuronrt::Session::NeffTensor>& tensors,
                                const std::vector<at::Tensor>& inputs, c10::DeviceIndex device,
                                bool wait) {
  std::vector<uint64_t> addresses;
  addresses.reserve(tensors.size());
  std::vector<at::Tensor> outputs;
  const at::TensorOptions on_device =
      at::TensorOptions().device(c10::Device(c10::DeviceType::PrivateUse1, device));
  size_t next_input = 0;
  for (const neuronrt::Session::NeffTensor& expected : tensors) {
    if (!expected.input) {
      if (expected.dtype) {
        const std::vector<int64_t> shape(expected.shape.begin(), expected.shape.end());
        outputs.push_back(
            at::empty(shape, on_device.dtype(static_cast<at::ScalarType>(*expected.dtype))));
      } else {
        outputs.push_back(at::empty({static_cast<int64_t>(expected.size_bytes)},
                                    on_device.dtype(at::kByte)));
      }
      addresses.push_back(reinterpret_cast<uint64_t>(outputs.back().data_ptr()));
      continue;
    }
    TORCH_CHECK_TYPE(next_input < inputs.size(), "NEFF '", name, "' was given ", inputs.size(),
                     " inputs; it takes more");
    const at::Tensor& tensor = inputs[next_input++];
    TORCH_CHECK(tensor.defined() && tensor.device().type() == c10::DeviceType::PrivateUse1 &&
                    tensor.device().index() == device,
                "NEFF '", name, "' input ", expected.name, " must be on neuron:", device);
    TORCH_CHECK(tensor.is_contiguous(), "NEFF '", name, "' input ", expected.name,
                " must be contiguous");
    TORCH_CHECK_VALUE(tensor.nbytes() == expected.size_bytes, "NEFF '", name, "' input ",
                      expected.name, " is ", expected.size_bytes, " bytes; it was given ",
                      tensor.nbytes());
    addresses.push_back(reinterpret_cast<uint64_t>(tensor.data_ptr()));
  }
  TORCH_CHECK_TYPE(next_input == inputs.size(), "NEFF '", name, "' takes ", next_input,
                   " inputs; it was given ", inputs.size());
  neuronrt::Stream& stream = RuntimeStream(CurrentStream(device));
  ThrowIfError(stream.Launch(executable_id, addresses, {}, name).status(), std::string(name));
  if (wait) ThrowIfError(stream.Synchronize(), std::string(name));
  return outputs;
}

}  // namespace torch_neuronx

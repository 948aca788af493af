#include "csrc/neff/NeffLaunch.h"

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

void LaunchNeff(uint64_t executable_id, std::string_view name,
                const std::vector<neuronrt::Session::NeffTensor>& expected,
                const std::vector<at::Tensor>& tensors, c10::DeviceIndex device, bool wait) {
  TORCH_CHECK(tensors.size() == expected.size(), "NEFF '", name, "' takes ", expected.size(),
              " tensors; it was given ", tensors.size());
  std::vector<uint64_t> addresses;
  addresses.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& tensor = tensors[i];
    TORCH_CHECK(tensor.defined() && tensor.device().type() == c10::DeviceType::PrivateUse1 &&
                    tensor.device().index() == device,
                "NEFF '", name, "' tensor ", expected[i].name, " must be on neuron:", device);
    TORCH_CHECK(tensor.is_contiguous(), "NEFF '", name, "' tensor ", expected[i].name,
                " must be contiguous");
    TORCH_CHECK(tensor.nbytes() == expected[i].size_bytes, "NEFF '", name, "' tensor ",
                expected[i].name, " is ", expected[i].size_bytes, " bytes; it was given ",
                tensor.nbytes());
    addresses.push_back(reinterpret_cast<uint64_t>(tensor.data_ptr()));
  }
  neuronrt::Stream& stream = RuntimeStream(CurrentStream(device));
  ThrowIfError(stream.Launch(executable_id, addresses, {}, name).status(), std::string(name));
  if (wait) ThrowIfError(stream.Synchronize(), std::string(name));
}

}  // namespace torch_neuronx

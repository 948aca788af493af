#include "csrc/python/SharingBindings.h"

#include <torch/extension.h>

#include "csrc/runtime/SharedStorage.h"

namespace torch_neuronx {

void BindSharing(pybind11::module& module) {
  // (handle, offset, nbytes) of the tensor's storage.
  module.def("_share_storage", [](const at::Tensor& tensor) {
    StorageHandle handle = ShareStorage(tensor.storage());
    return pybind11::make_tuple(pybind11::bytes(handle.segment_handle), handle.offset,
                                handle.nbytes);
  });
  // A uint8 tensor over the whole shared storage.
  module.def("_open_shared_storage", [](const std::string& segment_handle, uint64_t offset,
                                        uint64_t nbytes) {
    c10::Storage storage = OpenSharedStorage(
        StorageHandle{.segment_handle = segment_handle, .offset = offset, .nbytes = nbytes});
    const c10::Device device = storage.device();
    return at::empty({0}, at::TensorOptions().dtype(at::kByte).device(device))
        .set_(std::move(storage), 0, {static_cast<int64_t>(nbytes)}, {1});
  });
}

}  // namespace torch_neuronx

#include "csrc/aten/internal/CallWalker.h"

namespace torch_neuronx::internal {

std::optional<c10::DeviceIndex> CallDevice(const OpInfo& info, const Stack& arguments) {
  auto neuron_index = [](const at::Tensor& tensor) -> std::optional<c10::DeviceIndex> {
    if (tensor.defined() && tensor.device().type() == c10::DeviceType::PrivateUse1) {
      return tensor.device().index();
    }
    return std::nullopt;
  };
  std::optional<c10::DeviceIndex> from_device_argument;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const c10::IValue& value = arguments[i];
    if (value.isTensor()) {
      if (auto index = neuron_index(value.toTensor())) return index;
    } else if (value.isTensorList() || (value.isList() && info.kinds[i] == ArgKind::kOptionalTensorList)) {
      for (const c10::IValue& item : value.toListRef()) {
        if (item.isTensor()) {
          if (auto index = neuron_index(item.toTensor())) return index;
        }
      }
    } else if (value.isDevice() && value.toDevice().type() == c10::DeviceType::PrivateUse1) {
      from_device_argument = value.toDevice().has_index() ? value.toDevice().index()
                                                          : CurrentDevice();
    }
  }
  return from_device_argument;
}

void MoveCpuScalarsAndIndices(const OpInfo& info, c10::DeviceIndex device, Stack& arguments) {
  const c10::Device target(c10::DeviceType::PrivateUse1, device);
  auto move = [&](const at::Tensor& tensor,
                  bool is_index = false) -> std::optional<at::Tensor> {
    if (tensor.defined() && tensor.device().is_cpu() && (tensor.dim() == 0 || is_index)) {
      at::Tensor moved = tensor.to(target);
      // A Python number passed where a tensor goes (torch.true_divide(3.5,
      // t)) takes no part in type promotion; its device copy must not either.
      if (tensor.unsafeGetTensorImpl()->is_wrapped_number()) {
        moved.unsafeGetTensorImpl()->set_wrapped_number(true);
      }
      return moved;
    }
    return std::nullopt;
  };
  // Indices on the CPU or on the indexed tensor's device, in CUDA's words: a
  // CPU tensor indexed with neuron indices (x_cpu[idx_neuron]) is not moved
  // to the device, nor are indices moved between neuron devices.
  for (size_t i = 1; i < arguments.size() && arguments[0].isTensor(); ++i) {
    if (info.kinds[i] != ArgKind::kOptionalTensorList || !arguments[i].isList()) continue;
    const at::Tensor& self = arguments[0].toTensor();
    for (const c10::IValue& item : arguments[i].toListRef()) {
      if (!item.isTensor() || !item.toTensor().defined()) continue;
      const c10::Device where = item.toTensor().device();
      TORCH_CHECK(where.is_cpu() || where == self.device(), "indices should be either on ",
                  c10::kCPU, " or on the same device as the indexed tensor (", self.device(), ")");
    }
  }
  for (size_t i = 0; i < arguments.size(); ++i) {
    c10::IValue& value = arguments[i];
    if (info.kinds[i] == ArgKind::kTensor && value.isTensor()) {
      if (auto moved = move(value.toTensor(), info.is_index[i])) value = *moved;
    } else if (info.kinds[i] == ArgKind::kTensorList) {
      c10::List<at::Tensor> list = value.toTensorList();
      for (size_t j = 0; j < list.size(); ++j) {
        if (auto moved = move(list.get(j))) list.set(j, *moved);
      }
      value = list;
    }
  }
}

}  // namespace torch_neuronx::internal

// The operators the generic path cannot serve: allocation, metadata-only
// views, storage resize, set_ and is_set_to, reading a scalar back, and
// whether a tensor may take another's place in place.
#include <ATen/Context.h>
#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/is_set_to_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "csrc/runtime/NeuronAllocator.h"
#include "csrc/runtime/NeuronFunctions.h"

namespace torch_neuronx {
namespace {

constexpr c10::DispatchKeySet kNeuronKeys(c10::DispatchKey::PrivateUse1);

// A tensor has the dtype the program asked for. The simulated device
// computes float64 and complex128 as the CPU does; Trainium's engines have
// none (AWS's backend runs them as float32 and complex64), which the
// warning says once.
at::ScalarType DeviceDtype(std::optional<at::ScalarType> requested) {
  const at::ScalarType type = requested.value_or(at::get_default_dtype_as_scalartype());
  if (type == at::kDouble || type == at::kComplexDouble) {
    TORCH_WARN_ONCE("float64 and complex128 on neuron: the simulated device computes them in "
                    "full precision, as the CPU does; Trainium has no float64 engines, and "
                    "AWS's backend runs them as float32 and complex64 (docs/torch_neuronx.md)");
  }
  return type;
}

c10::Device Target(std::optional<c10::Device> device) {
  c10::Device target = device.value_or(c10::Device(c10::DeviceType::PrivateUse1));
  if (!target.has_index()) target.set_index(CurrentDevice());
  CheckDevice(target.index());
  return target;
}

// torch.use_deterministic_algorithms(True) (fill_uninitialized_memory, on
// by default): new memory holds NaN, or an integer dtype's largest value, as
// on the CPU and CUDA.
bool FillsUninitializedMemory() {
  return at::globalContext().deterministicAlgorithms() &&
         at::globalContext().deterministicFillUninitializedMemory();
}

at::Tensor Empty(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                 std::optional<at::Layout> layout, std::optional<c10::Device> device,
                 std::optional<bool> /*pin_memory*/,
                 std::optional<c10::MemoryFormat> memory_format) {
  TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided,
              "neuron tensors are strided; layout ", *layout, " is not supported");
  const c10::DeviceGuard guard(Target(device));
  at::Tensor result = at::detail::empty_generic(size, &NeuronAllocator(), kNeuronKeys,
                                                DeviceDtype(dtype), memory_format);
  if (FillsUninitializedMemory()) at::native::fill_empty_deterministic_(result);
  return result;
}

at::Tensor EmptyStrided(c10::IntArrayRef size, c10::IntArrayRef stride,
                        std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                        std::optional<c10::Device> device, std::optional<bool> /*pin_memory*/) {
  TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided,
              "neuron tensors are strided; layout ", *layout, " is not supported");
  const c10::DeviceGuard guard(Target(device));
  at::Tensor result = at::detail::empty_strided_generic(size, stride, &NeuronAllocator(),
                                                        kNeuronKeys, DeviceDtype(dtype));
  if (FillsUninitializedMemory()) at::native::fill_empty_deterministic_(result);
  return result;
}

at::Tensor AsStrided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                     std::optional<int64_t> storage_offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor View(const at::Tensor& self, c10::IntArrayRef size) {
  return at::native::view(self, size);
}

at::Tensor ReshapeAlias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

// Grows the storage (never shrinks it, as on the CPU) to hold `bytes`.
void EnsureStorage(const at::Tensor& self, size_t bytes) {
  c10::StorageImpl* storage = self.storage().unsafeGetStorageImpl();
  if (bytes > storage->nbytes()) ResizeNeuronStorage(*storage, bytes);
}

const at::Tensor& Resize(const at::Tensor& self, c10::IntArrayRef size,
                         std::optional<c10::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  if (self.sizes().equals(size)) return self;
  impl->set_sizes_contiguous(size);
  const size_t bytes =
      at::detail::computeStorageNbytesContiguous(size, self.dtype().itemsize(),
                                                 self.storage_offset());
  const auto old_bytes = static_cast<int64_t>(self.storage().nbytes());
  EnsureStorage(self, bytes);
  if (memory_format && *memory_format != c10::MemoryFormat::Preserve) {
    impl->empty_tensor_restride(*memory_format);
  }
  if (FillsUninitializedMemory()) at::native::fill_resize_deterministic_(self, old_bytes);
  return self;
}

at::Tensor& SetStorage(at::Tensor& self, c10::Storage source, int64_t storage_offset,
                       c10::IntArrayRef size, c10::IntArrayRef stride) {
  TORCH_CHECK(source.device().type() == c10::DeviceType::PrivateUse1,
              "set_: the storage is on ", source.device(), ", the tensor on ", self.device());
  auto* impl = self.unsafeGetTensorImpl();
  if (!self.storage().is_alias_of(source)) impl->set_storage_keep_dtype(std::move(source));
  impl->set_storage_offset(storage_offset);
  if (stride.empty()) {
    impl->set_sizes_contiguous(size);
  } else {
    impl->set_sizes_and_strides(size, stride);
  }
  const size_t bytes = stride.empty()
                           ? at::detail::computeStorageNbytesContiguous(
                                 size, self.dtype().itemsize(), storage_offset)
                           : at::detail::computeStorageNbytes(size, stride,
                                                              self.dtype().itemsize(),
                                                              storage_offset);
  EnsureStorage(self, bytes);
  return self;
}

at::Tensor& SetSource(at::Tensor& self, c10::Storage source) {
  const int64_t elements = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return SetStorage(self, std::move(source), 0, {elements}, {});
}

at::Tensor& SetTensor(at::Tensor& self, const at::Tensor& source) {
  if (self.is_same(source)) return self;
  return SetStorage(self, source.storage(), source.storage_offset(), source.sizes(),
                    source.strides());
}

at::Tensor& SetEmpty(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, &NeuronAllocator(), true);
  return SetStorage(self, std::move(storage), 0, {0}, {});
}

c10::Scalar LocalScalarDense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0, "item(): the tensor is empty");
  c10::Scalar result;
  AT_DISPATCH_V2(
      self.scalar_type(), "_local_scalar_dense_neuron",
      AT_WRAP([&] {
        scalar_t value;
        neuronrt::Stream& stream = RuntimeStream(CurrentStream(self.device().index()));
        ThrowIfError(stream.CopyToHost(&value, reinterpret_cast<uint64_t>(self.data_ptr()),
                                       sizeof(value), "item()"),
                     "reading a neuron tensor's value");
        result = c10::Scalar(value);
      }),
      AT_EXPAND(AT_ALL_TYPES), AT_EXPAND(AT_COMPLEX_TYPES), at::kComplexHalf, at::kBool,
      at::kHalf, at::kBFloat16, AT_EXPAND(AT_FLOAT8_TYPES), AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES));
  return result;
}

void RecordStream(at::Tensor& self, c10::Stream stream) {
  NeuronAllocator().recordStream(self.storage().data_ptr(), stream);
}

}  // namespace

// Module.to("neuron") moves each parameter in place (`param.data = moved`)
// only where the two tensors may be shallow-copied into each other;
// PyTorch's own rule knows its built-in devices alone (c10's TensorImpl
// points backends here), so every parameter became a new Parameter and
// weights that modules share (GPT-2's embedding and output layer) came apart
// on the device. Dense strided tensors of the CPU and of neuron are
// interchangeable, as CPU and CUDA ones are.
bool HasCompatibleShallowCopyType(const at::Tensor& self, const at::Tensor& from) {
  auto dense = [](const at::Tensor& tensor) {
    const c10::DeviceType type = tensor.device().type();
    return (type == c10::DeviceType::CPU || type == c10::DeviceType::PrivateUse1) &&
           tensor.layout() == at::kStrided && !tensor.is_quantized() && !tensor.is_nested();
  };
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set()) ||
         (dense(self) && dense(from));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", HasCompatibleShallowCopyType);
  m.impl("record_stream", RecordStream);
  m.impl("empty.memory_format", Empty);
  m.impl("empty_strided", EmptyStrided);
  m.impl("as_strided", AsStrided);
  m.impl("view", View);
  m.impl("_reshape_alias", ReshapeAlias);
  m.impl("resize_", Resize);
  m.impl("set_.source_Storage_storage_offset", SetStorage);
  m.impl("set_.source_Storage", SetSource);
  m.impl("set_.source_Tensor", SetTensor);
  m.impl("set_", SetEmpty);
  // Metadata: the same storage, offset, sizes and strides (the daemon would
  // see every tensor as memory of its own).
  m.impl("is_set_to", at::native::is_set_to);
  m.impl("_local_scalar_dense", LocalScalarDense);
}

}  // namespace torch_neuronx

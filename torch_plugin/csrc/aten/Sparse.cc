// Sparse tensors on neuron (torch.sparse's COO and compressed layouts).
//
// A sparse neuron tensor is ATen's own sparse tensor whose indices and values
// are neuron tensors: ATen's device-generic kernels make it and take it apart
// (the same functions SparseCPU and SparseMeta register), so `.indices()`,
// `.values()`, `nnz()` and copies between devices never leave the device.
// Computations on sparse tensors (coalesce, add, mm, sum, to_dense, ...) run
// on the CPU: their arguments are copied to the host, the CPU's sparse kernel
// runs, and its results are copied back; each such operator is named once in
// a warning and in torch_neuronx.get_fallback_ops(), as every CPU fallback is.
// The simulated device has no sparse engine to emulate, and AWS's backend
// has no torch.sparse at all; this makes programs that use it run, not fast.
#include <ATen/core/Tensor.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_dimI_native.h>
#include <ATen/ops/_dimV_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/ccol_indices_native.h>
#include <ATen/ops/col_indices_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/crow_indices_native.h>
#include <ATen/ops/copy_sparse_to_sparse_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/resize_as_sparse_native.h>
#include <ATen/ops/row_indices_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/zero_native.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "csrc/aten/GenericOp.h"

namespace torch_neuronx {
namespace {

bool OnNeuron(const at::Tensor& tensor) {
  return tensor.defined() && tensor.device().type() == c10::DeviceType::PrivateUse1;
}

// Writes `computed` (a CPU tensor) into `original` (its neuron argument),
// which an in-place or out= operator wrote on the CPU.
void CopyBack(const at::Tensor& original, const at::Tensor& computed) {
  if (original.layout() == c10::kStrided && original.sizes() != computed.sizes()) {
    original.resize_(computed.sizes());
  }
  original.copy_(computed);
}

// The boxed kernel of every operator on sparse neuron tensors without a
// device-generic kernel of its own (see the file comment).
void RunSparseOnCpu(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  // Copying a sparse tensor to the host takes it apart with the structure
  // kernels above; an operator that copy needs and that only reaches here
  // would recurse without end, so it is refused by name instead.
  thread_local bool copying_arguments = false;
  TORCH_CHECK(!copying_arguments, "torch_neuronx: ", op.operator_name(),
              " on sparse neuron tensors has no device-generic kernel, so sparse tensors "
              "cannot be copied to the host through it; please report this");
  const c10::FunctionSchema& schema = op.schema();
  const size_t argument_count = schema.arguments().size();
  const size_t first = stack->size() - argument_count;

  std::optional<c10::Device> device;
  // Neuron arguments the operator writes, with the CPU copies it writes.
  std::vector<std::pair<at::Tensor, at::Tensor>> written;
  auto to_cpu = [&](const at::Tensor& tensor, bool writes) {
    if (!OnNeuron(tensor)) return tensor;
    if (!device) device = tensor.device();
    at::Tensor copy;
    {
      struct Copying {
        Copying() { copying_arguments = true; }
        ~Copying() { copying_arguments = false; }
      } copying;
      copy = tensor.cpu();
    }
    if (writes) written.emplace_back(tensor, copy);
    return copy;
  };
  for (size_t i = 0; i < argument_count; ++i) {
    c10::IValue& value = (*stack)[first + i];
    const c10::AliasInfo* alias = schema.arguments()[i].alias_info();
    const bool writes = alias != nullptr && alias->isWrite();
    if (value.isTensor()) {
      value = to_cpu(value.toTensor(), writes);
    } else if (value.isTensorList()) {
      c10::List<at::Tensor> list = value.toTensorList();
      c10::List<at::Tensor> copies;
      for (size_t j = 0; j < list.size(); ++j) copies.push_back(to_cpu(list.get(j), writes));
      value = std::move(copies);
    } else if (value.isOptionalTensorList()) {
      c10::List<std::optional<at::Tensor>> list = value.toOptionalTensorList();
      c10::List<std::optional<at::Tensor>> copies;
      for (size_t j = 0; j < list.size(); ++j) {
        const std::optional<at::Tensor> element = list.get(j);
        copies.push_back(element ? std::optional(to_cpu(*element, writes)) : std::nullopt);
      }
      value = std::move(copies);
    } else if (value.isDevice() && value.toDevice().type() == c10::DeviceType::PrivateUse1) {
      if (!device) device = value.toDevice();
      value = c10::IValue(c10::Device(c10::DeviceType::CPU));
    }
  }
  const c10::Device target = device.value_or(
      c10::Device(c10::DeviceType::PrivateUse1,
                  c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1)->getDevice().index()));
  NoteCpuFallback(c10::toString(op.operator_name()),
                  "a computation on sparse tensors runs on the CPU's sparse kernels");

  op.callBoxed(stack);

  for (const auto& [original, computed] : written) CopyBack(original, computed);
  // A result that is an argument the operator wrote (add_, out=) is that
  // neuron argument; every other tensor result is copied to the device.
  const size_t return_count = schema.returns().size();
  for (size_t r = 0; r < return_count; ++r) {
    c10::IValue& value = (*stack)[stack->size() - return_count + r];
    if (value.isTensor()) {
      const at::Tensor result = value.toTensor();
      auto same = [&](const auto& entry) { return entry.second.is_same(result); };
      auto match = std::find_if(written.begin(), written.end(), same);
      value = match != written.end() ? match->first
              : result.defined()     ? result.to(target)
                                     : result;
    } else if (value.isTensorList()) {
      c10::List<at::Tensor> list = value.toTensorList();
      c10::List<at::Tensor> moved;
      for (size_t j = 0; j < list.size(); ++j) moved.push_back(list.get(j).to(target));
      value = std::move(moved);
    }
  }
}

void RunBoxedOnCpu(const c10::OperatorHandle& op, c10::DispatchKeySet /*keys*/,
                   torch::jit::Stack* stack) {
  RunSparseOnCpu(op, stack);
}

}  // namespace

// The sparse structure: ATen's device-generic kernels.
TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("_sparse_coo_tensor_with_dims", TORCH_FN(at::native::new_with_dims_sparse));
  m.impl("_sparse_coo_tensor_with_dims_and_tensors",
         TORCH_FN(at::native::new_with_dims_and_tensor_sparse_symint));
  m.impl("empty.memory_format", TORCH_FN(at::native::empty_sparse));
  m.impl("_indices", TORCH_FN(at::native::_indices_sparse));
  m.impl("_values", TORCH_FN(at::native::_values_sparse));
  m.impl("indices", TORCH_FN(at::native::indices_sparse));
  m.impl("values", TORCH_FN(at::native::values_sparse));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("_dimI", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("_dimV", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse));
  m.impl("is_coalesced", TORCH_FN(at::native::is_coalesced_sparse));
  m.impl("_coalesced_", TORCH_FN(at::native::_coalesced_sparse_));
  m.impl("sparse_resize_", TORCH_FN(at::native::sparse_resize_));
  m.impl("sparse_resize_and_clear_", TORCH_FN(at::native::sparse_resize_and_clear_));
  m.impl("copy_sparse_to_sparse_", TORCH_FN(at::native::copy_sparse_));
  m.impl("zero_", TORCH_FN(at::native::zero_sparse_));
  m.impl("copy_", TORCH_FN(at::native::copy_sparse_wrapper_));
  m.impl("clone", TORCH_FN(at::native::clone_sparse));
  m.impl("empty_like", TORCH_FN(at::native::empty_like_sparse_coo));
  m.impl("resize_as_sparse_", TORCH_FN(at::native::resize_as_sparse_));
}

TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(at::native::empty_sparse_compressed));
  m.impl("values", TORCH_FN(at::native::values_sparse_csr));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse_csr));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse_csr));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse_csr));
  m.impl("copy_", TORCH_FN(at::native::copy_sparse_compressed_));
  m.impl("clone", TORCH_FN(at::native::clone_sparse_compressed));
  m.impl("empty_like", TORCH_FN(at::native::empty_like_sparse_csr));
  m.impl("resize_as_sparse_", TORCH_FN(at::native::resize_as_sparse_compressed_));
  m.impl("crow_indices", TORCH_FN(at::native::crow_indices_sparse_csr));
  m.impl("col_indices", TORCH_FN(at::native::col_indices_sparse_csr));
  m.impl("ccol_indices", TORCH_FN(at::native::ccol_indices_sparse_csr));
  m.impl("row_indices", TORCH_FN(at::native::row_indices_sparse_csr));
}

// Everything else on sparse neuron tensors, and the dense operators whose
// results are sparse.
TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&RunBoxedOnCpu>());
}

TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&RunBoxedOnCpu>());
}

// The operators with a kernel for the CPU's sparse tensors but none for
// neuron's would take their CompositeExplicitAutograd kernel, written for
// dense tensors (clone as empty_like and a dense copy, ...), before the
// fallback above: found in the dispatcher's table, so operators PyTorch adds
// are covered, they run on the CPU's sparse kernels too.
const bool registered_sparse_kernels = [] {
  static auto* coo = new torch::Library(torch::Library::IMPL, "aten",
                                        c10::DispatchKey::SparsePrivateUse1, __FILE__, __LINE__);
  static auto* compressed = new torch::Library(
      torch::Library::IMPL, "aten", c10::DispatchKey::SparseCsrPrivateUse1, __FILE__, __LINE__);
  struct Layout {
    c10::DispatchKey cpu_key;
    c10::DispatchKey neuron_key;
    torch::Library* library;
  };
  const Layout layouts[] = {
      {c10::DispatchKey::SparseCPU, c10::DispatchKey::SparsePrivateUse1, coo},
      {c10::DispatchKey::SparseCsrCPU, c10::DispatchKey::SparseCsrPrivateUse1, compressed}};
  for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
    if (!name.name.starts_with("aten::")) continue;
    std::optional<c10::OperatorHandle> op = c10::Dispatcher::singleton().findOp(name);
    if (!op) continue;
    for (const auto& [cpu_key, neuron_key, library] : layouts) {
      if (!op->hasKernelForDispatchKey(cpu_key) || op->hasKernelForDispatchKey(neuron_key)) {
        continue;
      }
      const std::string qualified =
          name.overload_name.empty() ? name.name.substr(6)
                                     : name.name.substr(6) + "." + name.overload_name;
      library->impl(qualified.c_str(),
                    torch::CppFunction::makeFromBoxedFunction<&RunBoxedOnCpu>());
    }
  }
  return true;
}();

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name : {"_to_sparse", "_to_sparse.sparse_dim", "_to_sparse_csr",
                           "_to_sparse_csc", "_to_sparse_bsr", "_to_sparse_bsc"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&RunBoxedOnCpu>());
  }
}

}  // namespace torch_neuronx

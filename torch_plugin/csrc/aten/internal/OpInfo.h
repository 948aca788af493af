// What the generic op path knows about an operator, from its schema alone:
// how each argument is described to the daemon, which results are new
// tensors or arguments, and the out= or functional overload it runs as.
// Described once per operator and kept for the process.
#ifndef TORCH_NEURONX_CSRC_ATEN_INTERNAL_OP_INFO_H_
#define TORCH_NEURONX_CSRC_ATEN_INTERNAL_OP_INFO_H_

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace torch_neuronx::internal {

enum class ArgKind {
  kTensor,
  kTensorList,
  kOptionalTensorList,
  kInt,
  kIntList,
  kFloat,
  kFloatList,
  kBool,
  kBoolList,
  kScalar,
  kScalarList,
  kScalarType,
  kIntLike,  // Layout, MemoryFormat: enums ATen passes as ints
  kDevice,
  kString,
  kGenerator,
  kUnsupported,
};

bool IsTensorListType(const c10::TypePtr& type);

// What the generic path knows about one operator, from its schema.
struct OpInfo {
  std::string qualified;  // "aten::add.Tensor"
  std::vector<ArgKind> kinds;
  // Per argument: a tensor read as `index` or `indices` (index_fill,
  // index_select, gather, take, ...), which may come from the CPU.
  std::vector<bool> is_index;
  // Per argument: written by the operator (in-place and out= arguments).
  // Only these take a mutable data pointer, which copies a copy-on-write
  // storage (torch._lazy_clone) first.
  std::vector<bool> is_written;
  // Why the daemon cannot run it; empty when it can.
  std::string unsupported;
  // Returns alias inputs without writing them (view, transpose, ...).
  bool is_view = false;
  // Per return: the argument it is (in-place and out= overloads), or -1 for
  // a new tensor.
  std::vector<int> return_argument;
  bool returns_new = false;
  // No tensor argument is read (out=, factories) and the operator is not
  // in-place: scalar values may decide output shapes (arange.out), so they
  // are part of the signature.
  bool scalars_in_signature = false;
  // linspace, logspace, arange and range: their CPU and CUDA kernels keep
  // an out= tensor's shape when its element count is right, where their
  // meta kernels resize it (and warn).
  bool out_keeps_shape_of_right_count = false;
  // Random without a Generator argument (native_dropout).
  bool seeds_default_generator = false;
  // An in-place sampler (random_, uniform_, normal_, ...) whose numbers the
  // CPU kernel checks (CheckNumbersAsTheCpuDoes).
  bool checks_numbers_on_cpu = false;
  bool has_list_arguments = false;
  // The out= overload a functional operator runs as, when there is one.
  std::optional<c10::OperatorHandle> out_variant;
  // A non-structured out= overload runs as its functional overload, the
  // results copied into the out= tensors at these argument positions: such
  // CPU out= kernels may resize their outputs (mse_loss.out), which daemon
  // memory cannot do.
  std::optional<c10::OperatorHandle> functional_variant;
  std::vector<size_t> out_positions;
};

// The description of `op`, made on first use. Thread-safe; the reference
// lives as long as the process.
const OpInfo& InfoFor(const c10::OperatorHandle& op);

}  // namespace torch_neuronx::internal

#endif  // TORCH_NEURONX_CSRC_ATEN_INTERNAL_OP_INFO_H_

// Unboxed kernels for the operators a training step calls most, which run
// the generic path on arguments borrowed from the caller.
//
// Why: since PyTorch's PyObject preservation (2.10), a C++ reference to a
// tensor that Python holds increfs its PyObject when the tensor's refcount
// goes from one to two, and decrefs it on the way back, each under the GIL,
// which the Python bindings have released around the call. The boxed
// fallback copies every argument onto a stack: two GIL round trips per
// tensor argument, about a third of a small operator's cost. Here the stack
// borrows the tensors (no refcount change) and the generic path never
// copies them.
//
// A call these kernels cannot launch as it is (a CPU scalar among its
// arguments, an operator to run on the CPU) takes the boxed path with owned
// arguments, as an operator without a kernel here does.
#include <ATen/core/Tensor.h>
#include <ATen/ops/_log_softmax_backward_data_ops.h>
#include <ATen/ops/_log_softmax_ops.h>
#include <ATen/ops/_softmax_backward_data_ops.h>
#include <ATen/ops/_softmax_ops.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/addmm_ops.h>
#include <ATen/ops/baddbmm_ops.h>
#include <ATen/ops/bmm_ops.h>
#include <ATen/ops/div_ops.h>
#include <ATen/ops/embedding_dense_backward_ops.h>
#include <ATen/ops/exp_ops.h>
#include <ATen/ops/fill_ops.h>
#include <ATen/ops/gelu_backward_ops.h>
#include <ATen/ops/gelu_ops.h>
#include <ATen/ops/log_ops.h>
#include <ATen/ops/max_pool2d_with_indices_backward_ops.h>
#include <ATen/ops/mean_ops.h>
#include <ATen/ops/mm_ops.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/native_batch_norm_backward_ops.h>
#include <ATen/ops/native_batch_norm_ops.h>
#include <ATen/ops/native_layer_norm_backward_ops.h>
#include <ATen/ops/neg_ops.h>
#include <ATen/ops/nll_loss_backward_ops.h>
#include <ATen/ops/pow_ops.h>
#include <ATen/ops/relu_ops.h>
#include <ATen/ops/rsqrt_ops.h>
#include <ATen/ops/select_backward_ops.h>
#include <ATen/ops/sigmoid_backward_ops.h>
#include <ATen/ops/sigmoid_ops.h>
#include <ATen/ops/silu_ops.h>
#include <ATen/ops/sqrt_ops.h>
#include <ATen/ops/sub_ops.h>
#include <ATen/ops/sum_ops.h>
#include <ATen/ops/tanh_backward_ops.h>
#include <ATen/ops/tanh_ops.h>
#include <ATen/ops/threshold_backward_ops.h>
#include <ATen/ops/where_ops.h>
#include <ATen/ops/zero_ops.h>
#include <c10/util/MaybeOwned.h>
#include <torch/library.h>

#include <cstddef>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "csrc/aten/GenericOp.h"
#include "csrc/aten/internal/OpInfo.h"

namespace torch_neuronx {
namespace {

using torch::jit::Stack;

// A call's arguments as a stack whose tensors are borrowed: valid while the
// caller's tensors are, which is the kernel call. Not copyable; the stack's
// tensor entries must not be replaced while borrowed.
class BorrowedArguments {
 public:
  BorrowedArguments() { stack_.reserve(8); }
  BorrowedArguments(const BorrowedArguments&) = delete;
  BorrowedArguments& operator=(const BorrowedArguments&) = delete;
  ~BorrowedArguments() {
    for (size_t index : borrowed_) {
      c10::MaybeOwnedTraits<at::Tensor>::destroyBorrow(stack_[index].toTensor());
    }
  }

  void Push(const at::Tensor& tensor) {
    borrowed_.push_back(stack_.size());
    stack_.emplace_back(c10::MaybeOwnedTraits<at::Tensor>::createBorrow(tensor));
  }
  void Push(const std::optional<at::Tensor>& tensor) {
    if (tensor.has_value()) {
      Push(*tensor);
    } else {
      stack_.emplace_back();
    }
  }
  template <class T>
  void Push(const T& value) {
    static_assert(!std::is_same_v<T, at::TensorList> && !std::is_same_v<T, at::ITensorListRef>,
                  "tensor lists are not borrowed: leave such operators to the boxed path");
    stack_.emplace_back(value);
  }

  Stack& stack() { return stack_; }

 private:
  Stack stack_;
  absl::InlinedVector<size_t, 8> borrowed_;
};

// The mutable tensor argument at `index` (what an in-place or out= overload
// returns).
template <class... Args>
at::Tensor& MutableArgument(size_t index, Args&... args) {
  at::Tensor* found = nullptr;
  size_t position = 0;
  auto visit = [&](auto& argument) {
    using Argument = std::remove_reference_t<decltype(argument)>;
    if constexpr (std::is_same_v<Argument, at::Tensor>) {
      if (position == index) found = &argument;
    }
    ++position;
  };
  (visit(args), ...);
  TORCH_INTERNAL_ASSERT(found != nullptr, "result aliases argument ", index,
                        ", which is not a mutable tensor");
  return *found;
}

template <class Result>
struct Results;

template <>
struct Results<at::Tensor> {
  static at::Tensor FromOutputs(std::vector<at::Tensor>& outputs) { return std::move(outputs[0]); }
  static at::Tensor FromStack(Stack& stack) { return std::move(stack[0]).toTensor(); }
};

template <class... Tensors>
struct Results<std::tuple<Tensors...>> {
  static_assert((std::is_same_v<Tensors, at::Tensor> && ...), "only new tensors are returned");
  static std::tuple<Tensors...> FromOutputs(std::vector<at::Tensor>& outputs) {
    return Take(outputs, std::index_sequence_for<Tensors...>());
  }
  static std::tuple<Tensors...> FromStack(Stack& stack) {
    std::vector<at::Tensor> outputs;
    for (c10::IValue& value : stack) outputs.push_back(std::move(value).toTensor());
    return FromOutputs(outputs);
  }

 private:
  template <size_t... I>
  static std::tuple<Tensors...> Take(std::vector<at::Tensor>& outputs, std::index_sequence<I...>) {
    return std::tuple<Tensors...>(std::move(outputs[I])...);
  }
};

template <class Op, class Signature = typename Op::schema>
struct Unboxed;

template <class Op, class Result, class... Args>
struct Unboxed<Op, Result(Args...)> {
  static Result Call(Args... args) {
    static const c10::OperatorHandle op =
        c10::Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name);
    static const internal::OpInfo& info = internal::InfoFor(op);
    {
      BorrowedArguments arguments;
      (arguments.Push(args), ...);
      std::optional<std::vector<at::Tensor>> outputs =
          TryLaunchBorrowed(op, info, arguments.stack());
      if (outputs.has_value()) {
        if constexpr (std::is_same_v<Result, at::Tensor&>) {
          return MutableArgument(info.return_argument[0], args...);
        } else {
          return Results<Result>::FromOutputs(*outputs);
        }
      }
    }
    Stack stack;
    torch::jit::push(stack, args...);
    NeuronFallback(op, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), &stack);
    if constexpr (std::is_same_v<Result, at::Tensor&>) {
      return MutableArgument(info.return_argument[0], args...);
    } else {
      return Results<Result>::FromStack(stack);
    }
  }
};

template <class Op>
void Register(torch::Library& library) {
  const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name);
  TORCH_INTERNAL_ASSERT(!op.hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1), Op::name, ".",
                        Op::overload_name, " already has a PrivateUse1 kernel");
  std::string name = std::string(Op::name).substr(std::string("aten::").size());
  if (Op::overload_name[0] != '\0') name += std::string(".") + Op::overload_name;
  library.impl(name.c_str(), TORCH_FN(Unboxed<Op>::Call));
}

template <class... Ops>
void RegisterAll(torch::Library& library) {
  (Register<Ops>(library), ...);
}

}  // namespace

// Chosen from what a transformer's and a ResNet's training steps call
// (counted with a TorchDispatchMode). Structured operators are registered by
// their out= overload, which ATen's structured composite calls after its C++
// meta function: their argument errors keep the CPU's messages (meta
// inference's Python kernels word them otherwise). Operators with a neuron
// kernel of their own (Registration.cc, KnownShapes.cc, ...) are not listed,
// nor those PyTorch gives a PrivateUse1 kernel (functorch's masked_fill).
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  namespace ops = at::_ops;
  RegisterAll<ops::add_out, ops::sub_out, ops::mul_out, ops::div_out, ops::neg_out, ops::exp_out,
              ops::log_out, ops::sqrt_out, ops::rsqrt_out, ops::tanh_out, ops::sigmoid_out,
              ops::gelu_out, ops::gelu_backward_grad_input, ops::silu_out,
              ops::threshold_backward_grad_input, ops::sigmoid_backward_grad_input,
              ops::tanh_backward_grad_input, ops::pow_Tensor_Scalar_out>(m);
  RegisterAll<ops::mm_out, ops::bmm_out, ops::addmm_out, ops::baddbmm_out, ops::sum_IntList_out,
              ops::mean_out, ops::_softmax_out, ops::_log_softmax_out,
              ops::_softmax_backward_data_out, ops::_log_softmax_backward_data_out,
              ops::nll_loss_backward_grad_input,
              ops::max_pool2d_with_indices_backward_grad_input>(m);
  RegisterAll<ops::relu, ops::relu_, ops::where_self, ops::fill__Scalar, ops::zero_,
              ops::native_batch_norm, ops::native_batch_norm_backward,
              ops::native_layer_norm_backward, ops::embedding_dense_backward,
              ops::select_backward>(m);
}

}  // namespace torch_neuronx

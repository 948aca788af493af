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
#include <ATen/ScalarOps.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/boxing/KernelFunction.h>
#include <ATen/ops/_log_softmax_backward_data_meta_dispatch.h>
#include <ATen/ops/_log_softmax_backward_data_ops.h>
#include <ATen/ops/_log_softmax_meta_dispatch.h>
#include <ATen/ops/_log_softmax_ops.h>
#include <ATen/ops/_softmax_backward_data_meta_dispatch.h>
#include <ATen/ops/_softmax_backward_data_ops.h>
#include <ATen/ops/_softmax_meta_dispatch.h>
#include <ATen/ops/_softmax_ops.h>
#include <ATen/ops/add_meta_dispatch.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/addmm_meta_dispatch.h>
#include <ATen/ops/addmm_ops.h>
#include <ATen/ops/baddbmm_meta_dispatch.h>
#include <ATen/ops/baddbmm_ops.h>
#include <ATen/ops/bmm_meta_dispatch.h>
#include <ATen/ops/bmm_ops.h>
#include <ATen/ops/div_meta_dispatch.h>
#include <ATen/ops/div_ops.h>
#include <ATen/ops/embedding_dense_backward_ops.h>
#include <ATen/ops/exp_meta_dispatch.h>
#include <ATen/ops/exp_ops.h>
#include <ATen/ops/fill_meta_dispatch.h>
#include <ATen/ops/fill_ops.h>
#include <ATen/ops/gelu_backward_meta_dispatch.h>
#include <ATen/ops/gelu_backward_ops.h>
#include <ATen/ops/gelu_meta_dispatch.h>
#include <ATen/ops/gelu_ops.h>
#include <ATen/ops/log_meta_dispatch.h>
#include <ATen/ops/log_ops.h>
#include <ATen/ops/max_pool2d_with_indices_backward_meta_dispatch.h>
#include <ATen/ops/max_pool2d_with_indices_backward_ops.h>
#include <ATen/ops/mean_meta_dispatch.h>
#include <ATen/ops/mean_ops.h>
#include <ATen/ops/mm_meta_dispatch.h>
#include <ATen/ops/mm_ops.h>
#include <ATen/ops/mul_meta_dispatch.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/native_batch_norm_backward_ops.h>
#include <ATen/ops/native_batch_norm_ops.h>
#include <ATen/ops/native_layer_norm_backward_ops.h>
#include <ATen/ops/neg_meta_dispatch.h>
#include <ATen/ops/neg_ops.h>
#include <ATen/ops/nll_loss_backward_meta_dispatch.h>
#include <ATen/ops/nll_loss_backward_ops.h>
#include <ATen/ops/pow_meta_dispatch.h>
#include <ATen/ops/pow_ops.h>
#include <ATen/ops/relu_ops.h>
#include <ATen/ops/rsqrt_meta_dispatch.h>
#include <ATen/ops/rsqrt_ops.h>
#include <ATen/ops/select_backward_ops.h>
#include <ATen/ops/sigmoid_backward_meta_dispatch.h>
#include <ATen/ops/sigmoid_backward_ops.h>
#include <ATen/ops/sigmoid_meta_dispatch.h>
#include <ATen/ops/sigmoid_ops.h>
#include <ATen/ops/silu_meta_dispatch.h>
#include <ATen/ops/silu_ops.h>
#include <ATen/ops/sqrt_meta_dispatch.h>
#include <ATen/ops/sqrt_ops.h>
#include <ATen/ops/sub_meta_dispatch.h>
#include <ATen/ops/sub_ops.h>
#include <ATen/ops/sum_meta_dispatch.h>
#include <ATen/ops/sum_ops.h>
#include <ATen/ops/tanh_backward_meta_dispatch.h>
#include <ATen/ops/tanh_backward_ops.h>
#include <ATen/ops/tanh_meta_dispatch.h>
#include <ATen/ops/tanh_ops.h>
#include <ATen/ops/threshold_backward_meta_dispatch.h>
#include <ATen/ops/threshold_backward_ops.h>
#include <ATen/ops/where_ops.h>
#include <ATen/ops/zero_meta_dispatch.h>
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
#include "csrc/aten/internal/MetaTensors.h"
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

// A Python number passed where an operator takes a tensor (`x * 2.0` is
// mul.Tensor with a CPU "wrapped number") runs as the operator's Scalar
// overload: the number travels as a launch immediate, instead of a copy to
// the device per call, and every number shares one executable. The Scalar
// overload is defined as the Tensor one on the wrapped number, so results and
// dtypes are the same.
bool IsWrappedNumber(const at::Tensor& tensor) {
  return tensor.defined() && tensor.unsafeGetTensorImpl()->is_wrapped_number();
}

c10::Scalar NumberOf(const at::Tensor& wrapped) {
  switch (wrapped.scalar_type()) {
    case at::kDouble:
      return *static_cast<const double*>(wrapped.const_data_ptr());
    case at::kLong:
      return *static_cast<const int64_t*>(wrapped.const_data_ptr());
    case at::kBool:
      return *static_cast<const bool*>(wrapped.const_data_ptr());
    default:
      return wrapped.item();
  }
}

template <class TensorOp, class ScalarOp, class Signature = typename TensorOp::schema>
struct WrappedNumberAs;

template <class TensorOp, class ScalarOp, class Result, class Self, class... Rest>
struct WrappedNumberAs<TensorOp, ScalarOp, Result(Self, const at::Tensor&, Rest...)> {
  static Result Call(Self self, const at::Tensor& other, Rest... rest) {
    if (IsWrappedNumber(other)) return Unboxed<ScalarOp>::Call(self, NumberOf(other), rest...);
    return Unboxed<TensorOp>::Call(self, other, rest...);
  }
};

// The C++ meta function of a Scalar overload: the Tensor overload's on the
// wrapped number, which is how ATen defines the Scalar overload.
template <class ScalarOp, class TensorOp, typename TensorOp::schema* TensorMeta,
          class Signature = typename ScalarOp::schema>
struct WrappedNumberMeta;

template <class ScalarOp, class TensorOp, typename TensorOp::schema* TensorMeta, class Result,
          class Self, class... Rest>
struct WrappedNumberMeta<ScalarOp, TensorOp, TensorMeta,
                         Result(Self, const at::Scalar&, Rest...)> {
  static Result Call(Self self, const at::Scalar& other, Rest... rest) {
    return TensorMeta(self, at::native::wrapped_scalar_tensor(other), rest...);
  }
};

template <class Op>
c10::OperatorHandle HandleOf() {
  return c10::Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name);
}

template <class Op, class Function>
void UseCppMeta(Function* meta) {
  internal::UseCppMeta(HandleOf<Op>(), c10::KernelFunction::makeFromUnboxedRuntimeFunction(meta));
}

// Registers `Implementation::Call` as Op's neuron kernel and, when given,
// ATen's C++ meta function for it (internal::UseCppMeta says why).
template <class Op, typename Op::schema* Meta = nullptr, class Implementation = Unboxed<Op>>
struct Kernel {
  static void Register(torch::Library& library) {
    const c10::OperatorHandle op = HandleOf<Op>();
    TORCH_INTERNAL_ASSERT(!op.hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1), Op::name,
                          ".", Op::overload_name, " already has a PrivateUse1 kernel");
    std::string name = std::string(Op::name).substr(std::string("aten::").size());
    if (Op::overload_name[0] != '\0') name += std::string(".") + Op::overload_name;
    library.impl(name.c_str(), TORCH_FN(Implementation::Call));
    if constexpr (Meta != nullptr) UseCppMeta<Op>(Meta);
  }
};

// A Tensor-other overload whose Python numbers run as ScalarOp.
template <class TensorOp, typename TensorOp::schema* Meta, class ScalarOp>
struct WithNumbersAs {
  static void Register(torch::Library& library) {
    Kernel<TensorOp, Meta, WrappedNumberAs<TensorOp, ScalarOp>>::Register(library);
    UseCppMeta<ScalarOp>(&WrappedNumberMeta<ScalarOp, TensorOp, Meta>::Call);
  }
};

template <class... Kernels>
void RegisterAll(torch::Library& library) {
  (Kernels::Register(library), ...);
}

}  // namespace

// Chosen from what a transformer's and a ResNet's training steps call
// (counted with a TorchDispatchMode), with each structured operator's
// functional, in-place and out= overloads. Operators with a neuron kernel of
// their own (Registration.cc, KnownShapes.cc, ...) are not listed, nor those
// PyTorch gives a PrivateUse1 kernel (functorch's masked_fill).
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  namespace ops = at::_ops;
  namespace meta = at::meta;
  RegisterAll<WithNumbersAs<ops::add_Tensor, meta::add, ops::add_Scalar>,
              WithNumbersAs<ops::add__Tensor, meta::add_, ops::add__Scalar>,
              Kernel<ops::add_out, meta::add_outf>,
              WithNumbersAs<ops::sub_Tensor, meta::sub, ops::sub_Scalar>,
              WithNumbersAs<ops::sub__Tensor, meta::sub_, ops::sub__Scalar>,
              Kernel<ops::sub_out, meta::sub_outf>,
              WithNumbersAs<ops::mul_Tensor, meta::mul, ops::mul_Scalar>,
              WithNumbersAs<ops::mul__Tensor, meta::mul_, ops::mul__Scalar>,
              Kernel<ops::mul_out, meta::mul_outf>,
              WithNumbersAs<ops::div_Tensor, meta::div, ops::div_Scalar>,
              WithNumbersAs<ops::div__Tensor, meta::div_, ops::div__Scalar>,
              Kernel<ops::div_out, meta::div_outf>>(m);
  RegisterAll<Kernel<ops::neg, meta::neg>, Kernel<ops::neg_, meta::neg_>,
              Kernel<ops::neg_out, meta::neg_outf>, Kernel<ops::exp, meta::exp>,
              Kernel<ops::exp_, meta::exp_>, Kernel<ops::exp_out, meta::exp_outf>,
              Kernel<ops::log, meta::log>, Kernel<ops::log_, meta::log_>,
              Kernel<ops::log_out, meta::log_outf>, Kernel<ops::sqrt, meta::sqrt>,
              Kernel<ops::sqrt_, meta::sqrt_>, Kernel<ops::sqrt_out, meta::sqrt_outf>,
              Kernel<ops::rsqrt, meta::rsqrt>, Kernel<ops::rsqrt_, meta::rsqrt_>,
              Kernel<ops::rsqrt_out, meta::rsqrt_outf>, Kernel<ops::tanh, meta::tanh>,
              Kernel<ops::tanh_, meta::tanh_>, Kernel<ops::tanh_out, meta::tanh_outf>,
              Kernel<ops::sigmoid, meta::sigmoid>, Kernel<ops::sigmoid_, meta::sigmoid_>,
              Kernel<ops::sigmoid_out, meta::sigmoid_outf>, Kernel<ops::gelu, meta::gelu>,
              Kernel<ops::gelu_, meta::gelu_>, Kernel<ops::gelu_out, meta::gelu_outf>,
              Kernel<ops::silu, meta::silu>, Kernel<ops::silu_, meta::silu_>,
              Kernel<ops::silu_out, meta::silu_outf>,
              Kernel<ops::pow_Tensor_Scalar, meta::pow>, Kernel<ops::pow__Scalar, meta::pow_>,
              Kernel<ops::pow_Tensor_Scalar_out, meta::pow_outf>>(m);
  RegisterAll<Kernel<ops::gelu_backward, meta::gelu_backward>,
              Kernel<ops::gelu_backward_grad_input, meta::gelu_backward_outf>,
              Kernel<ops::threshold_backward, meta::threshold_backward>,
              Kernel<ops::threshold_backward_grad_input, meta::threshold_backward_outf>,
              Kernel<ops::sigmoid_backward, meta::sigmoid_backward>,
              Kernel<ops::sigmoid_backward_grad_input, meta::sigmoid_backward_outf>,
              Kernel<ops::tanh_backward, meta::tanh_backward>,
              Kernel<ops::tanh_backward_grad_input, meta::tanh_backward_outf>,
              Kernel<ops::nll_loss_backward, meta::nll_loss_backward_symint>,
              Kernel<ops::nll_loss_backward_grad_input, meta::nll_loss_backward_symint_outf>,
              Kernel<ops::max_pool2d_with_indices_backward,
                     meta::max_pool2d_with_indices_backward>,
              Kernel<ops::max_pool2d_with_indices_backward_grad_input,
                     meta::max_pool2d_with_indices_backward_outf>>(m);
  RegisterAll<Kernel<ops::mm, meta::mm>, Kernel<ops::mm_out, meta::mm_outf>,
              Kernel<ops::bmm, meta::bmm>, Kernel<ops::bmm_out, meta::bmm_outf>,
              Kernel<ops::addmm, meta::addmm>, Kernel<ops::addmm_, meta::addmm_>,
              Kernel<ops::addmm_out, meta::addmm_outf>, Kernel<ops::baddbmm, meta::baddbmm>,
              Kernel<ops::baddbmm_, meta::baddbmm_>,
              Kernel<ops::baddbmm_out, meta::baddbmm_outf>,
              Kernel<ops::sum_dim_IntList, meta::sum>,
              Kernel<ops::sum_IntList_out, meta::sum_outf>, Kernel<ops::mean_dim, meta::mean>,
              Kernel<ops::mean_out, meta::mean_outf>, Kernel<ops::_softmax, meta::_softmax>,
              Kernel<ops::_softmax_out, meta::_softmax_outf>,
              Kernel<ops::_log_softmax, meta::_log_softmax>,
              Kernel<ops::_log_softmax_out, meta::_log_softmax_outf>,
              Kernel<ops::_softmax_backward_data, meta::_softmax_backward_data>,
              Kernel<ops::_softmax_backward_data_out, meta::_softmax_backward_data_outf>,
              Kernel<ops::_log_softmax_backward_data, meta::_log_softmax_backward_data>,
              Kernel<ops::_log_softmax_backward_data_out,
                     meta::_log_softmax_backward_data_outf>>(m);
  RegisterAll<Kernel<ops::relu>, Kernel<ops::relu_>, Kernel<ops::where_self>,
              Kernel<ops::fill__Scalar, meta::fill_>, Kernel<ops::zero_, meta::zero_>,
              Kernel<ops::native_batch_norm>, Kernel<ops::native_batch_norm_backward>,
              Kernel<ops::native_layer_norm_backward>, Kernel<ops::embedding_dense_backward>,
              Kernel<ops::select_backward>>(m);
}

}  // namespace torch_neuronx

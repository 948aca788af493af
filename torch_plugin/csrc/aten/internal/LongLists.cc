#include "csrc/aten/internal/LongLists.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/stack.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "csrc/aten/GenericOp.h"

namespace torch_neuronx::internal {
namespace {

using torch::jit::Stack;

enum class ListOperator { kPerElement, kConcatenation, kOther };

ListOperator KindOf(const c10::OperatorHandle& op) {
  const std::string& name = op.schema().name();
  if (name == "aten::cat" || name == "aten::stack") return ListOperator::kConcatenation;
  if (absl::StartsWith(name, "aten::_foreach_") || absl::StartsWith(name, "aten::_fused_") ||
      name == "aten::_amp_foreach_non_finite_check_and_unscale_") {
    return ListOperator::kPerElement;
  }
  return ListOperator::kOther;
}

bool IsList(ArgKind kind) {
  return kind == ArgKind::kTensorList || kind == ArgKind::kScalarList;
}

size_t LongestList(const OpInfo& info, const Stack& arguments) {
  size_t length = 0;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (IsList(info.kinds[i])) length = std::max(length, arguments[i].toListRef().size());
  }
  return length;
}

// Elements [begin, end) of a list argument `length` long; other arguments
// as they are.
c10::IValue Slice(const c10::IValue& argument, ArgKind kind, size_t length, size_t begin,
                  size_t end) {
  if (!IsList(kind) || argument.toListRef().size() != length) return argument;
  const auto& items = argument.toListRef();
  if (kind == ArgKind::kTensorList) {
    std::vector<at::Tensor> slice;
    for (size_t j = begin; j < end; ++j) slice.push_back(items[j].toTensor());
    return c10::IValue(std::move(slice));
  }
  c10::impl::GenericList slice(c10::NumberType::get());
  for (size_t j = begin; j < end; ++j) slice.push_back(items[j]);
  return c10::IValue(std::move(slice));
}

void LaunchPerElement(const c10::OperatorHandle& op, const OpInfo& info, const Stack& arguments,
                      size_t length, size_t slice_length, Stack* stack) {
  const auto& returns = op.schema().returns();
  std::vector<std::vector<at::Tensor>> lists(returns.size());
  for (size_t begin = 0; begin < length; begin += slice_length) {
    const size_t end = std::min(length, begin + slice_length);
    Stack part;
    for (size_t i = 0; i < arguments.size(); ++i) {
      part.push_back(Slice(arguments[i], info.kinds[i], length, begin, end));
    }
    LaunchOnDevice(op, &part);
    for (size_t r = 0; r < part.size(); ++r) {
      if (!part[r].isTensorList()) continue;
      for (const at::Tensor& tensor : part[r].toTensorVector()) lists[r].push_back(tensor);
    }
  }
  for (size_t r = 0; r < returns.size(); ++r) {
    if (IsTensorListType(returns[r].type())) {
      stack->emplace_back(std::move(lists[r]));
    } else {
      TORCH_INTERNAL_ASSERT(info.return_argument[r] >= 0, info.qualified,
                            ": a per-element result that is neither a list nor an argument");
      stack->push_back(arguments[info.return_argument[r]]);
    }
  }
}

// cat(tensors, dim[, out]) and stack(tensors, dim[, out]): the slices'
// partial results, concatenated along `dim` (stack's partials already have
// its new dimension), into `out` when given.
void LaunchConcatenation(const c10::OperatorHandle& op, const Stack& arguments,
                         size_t slice_length, Stack* stack) {
  const std::vector<at::Tensor> tensors = arguments[0].toTensorVector();
  const int64_t dim = arguments[1].toInt();
  const bool stacks = op.schema().name() == "aten::stack";
  std::vector<at::Tensor> partials;
  for (size_t begin = 0; begin < tensors.size(); begin += slice_length) {
    const size_t end = std::min(tensors.size(), begin + slice_length);
    const std::vector<at::Tensor> slice(tensors.begin() + begin, tensors.begin() + end);
    partials.push_back(stacks ? at::stack(slice, dim) : at::cat(slice, dim));
  }
  if (arguments.size() > 2) {
    at::Tensor out = arguments[2].toTensor();
    at::cat_out(out, partials, dim);
    stack->emplace_back(std::move(out));
  } else {
    stack->emplace_back(at::cat(partials, dim));
  }
}

}  // namespace

size_t SliceLength(size_t length, LaunchSize used, LaunchSize limit) {
  size_t slice = (length + 1) / 2;
  if (used.addresses > limit.addresses) {
    slice = std::min(slice, limit.addresses * length / used.addresses);
  }
  if (used.scalar_bytes > limit.scalar_bytes) {
    slice = std::min(slice, limit.scalar_bytes * length / used.scalar_bytes);
  }
  return std::max<size_t>(slice, 1);
}

bool LaunchInSlices(const c10::OperatorHandle& op, const OpInfo& info, Stack* stack,
                    LaunchSize used, LaunchSize limit) {
  const ListOperator kind = KindOf(op);
  if (kind == ListOperator::kOther) return false;
  const size_t argument_count = op.schema().arguments().size();
  const Stack arguments(stack->end() - argument_count, stack->end());
  // cat.names takes a Dimname, which a LAUNCH never does.
  if (kind == ListOperator::kConcatenation && !arguments[1].isInt()) return false;
  const size_t length = LongestList(info, arguments);
  if (length < 2) return false;
  const size_t slice_length = SliceLength(length, used, limit);
  torch::jit::drop(*stack, argument_count);
  if (kind == ListOperator::kPerElement) {
    LaunchPerElement(op, info, arguments, length, slice_length, stack);
  } else {
    LaunchConcatenation(op, arguments, slice_length, stack);
  }
  return true;
}

}  // namespace torch_neuronx::internal

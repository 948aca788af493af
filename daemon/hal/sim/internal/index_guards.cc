#include "daemon/hal/sim/internal/index_guards.h"

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

namespace neuron::rtd::hal::sim::internal {
namespace {

const at::Tensor& TensorAt(const torch::jit::Stack& stack, size_t index) {
  TORCH_CHECK(index < stack.size() && stack[index].isTensor(), "argument ", index,
              " is not a tensor");
  return stack[index].toTensor();
}

// Every element of `index` is in [low, high).
void CheckRange(const char* what, const at::Tensor& index, int64_t low, int64_t high) {
  TORCH_CHECK_INDEX(!at::isFloatingType(index.scalar_type()), what, " must be integral");
  if (index.numel() == 0) return;
  const int64_t smallest = index.min().item<int64_t>();
  const int64_t largest = index.max().item<int64_t>();
  TORCH_CHECK_INDEX(smallest >= low && largest < high, what, " holds ",
                    smallest < low ? smallest : largest, ", out of range [", low, ", ", high,
                    ")");
}

// offset2bag maps each index to its bag: a row of `grad`, one per index.
void CheckOffset2Bag(const at::Tensor& offset2bag, const at::Tensor& indices,
                     const at::Tensor& grad) {
  if (offset2bag.numel() == 0) return;  // the kernel rebuilds it from offsets
  TORCH_CHECK_INDEX(offset2bag.numel() >= indices.numel(), "offset2bag has ",
                    offset2bag.numel(), " entries for ", indices.numel(), " indices");
  TORCH_CHECK_INDEX(grad.dim() >= 1, "grad must have a bag dimension");
  CheckRange("offset2bag", offset2bag, 0, grad.size(0));
}

// _embedding_bag_dense_backward(grad, indices, offset2bag, bag_size,
// maximum_indices, num_weights, scale_grad_by_freq, mode, ...).
void EmbeddingBagDenseBackward(const torch::jit::Stack& stack) {
  const at::Tensor& grad = TensorAt(stack, 0);
  const at::Tensor& indices = TensorAt(stack, 1);
  const int64_t num_weights = stack.at(5).toInt();
  const int64_t mode = stack.at(7).toInt();
  CheckRange("indices", indices, 0, num_weights);
  CheckOffset2Bag(TensorAt(stack, 2), indices, grad);
  const at::Tensor& bag_size = TensorAt(stack, 3);
  TORCH_CHECK_INDEX(grad.dim() >= 1 && (bag_size.numel() == 0 || bag_size.numel() >= grad.size(0)),
                    "bag_size has ", bag_size.numel(), " entries for ",
                    grad.dim() >= 1 ? grad.size(0) : 0, " bags");
  if (mode == 2) {  // max: each output element came from one row, or none (-1)
    const at::Tensor& maximum_indices = TensorAt(stack, 4);
    TORCH_CHECK_INDEX(maximum_indices.numel() >= grad.numel(), "maximum_indices has ",
                      maximum_indices.numel(), " entries for a gradient of ", grad.numel());
    CheckRange("maximum_indices", maximum_indices, -1, num_weights);
  }
}

// _embedding_bag_per_sample_weights_backward(grad, weight, indices,
// offsets, offset2bag, mode, padding_idx).
void EmbeddingBagPerSampleWeightsBackward(const torch::jit::Stack& stack) {
  const at::Tensor& grad = TensorAt(stack, 0);
  const at::Tensor& weight = TensorAt(stack, 1);
  const at::Tensor& indices = TensorAt(stack, 2);
  TORCH_CHECK_INDEX(weight.dim() >= 1, "weight must have rows");
  CheckRange("indices", indices, 0, weight.size(0));
  CheckOffset2Bag(TensorAt(stack, 4), indices, grad);
}

}  // namespace

void CheckUncheckedIndices(std::string_view qualified, const torch::jit::Stack& stack) {
  // The out= forms too: the qualified name carries the overload.
  if (qualified.starts_with("aten::_embedding_bag_dense_backward")) {
    EmbeddingBagDenseBackward(stack);
  } else if (qualified.starts_with("aten::_embedding_bag_per_sample_weights_backward")) {
    EmbeddingBagPerSampleWeightsBackward(stack);
  }
}

}  // namespace neuron::rtd::hal::sim::internal

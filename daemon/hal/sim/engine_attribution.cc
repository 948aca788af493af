#include "daemon/hal/sim/engine_attribution.h"

#include <algorithm>
#include <array>


namespace neuron::rtd::hal::sim {
namespace {

// Operator base names (no namespace, no overload, no trailing underscore),
// sorted for binary search.
constexpr std::array<std::string_view, 22> kTensorOps = {
    "_convolution",    "_scaled_dot_product_attention_math", "_scaled_dot_product_flash_attention",
    "addbmm",          "addmm",           "addmv",           "addr",
    "baddbmm",         "bmm",             "conv1d",          "conv2d",
    "conv3d",          "conv_transpose2d", "convolution",    "convolution_backward",
    "dot",             "einsum",          "linear",          "matmul",
    "mm",              "mv",              "tensordot"};

constexpr std::array<std::string_view, 38> kScalarOps = {
    "_log_softmax", "_log_softmax_backward_data", "_softmax", "_softmax_backward_data",
    "acos", "asin", "atan", "cos", "cosh", "elu", "erf", "erfc", "erfinv", "exp", "exp2",
    "expm1", "gelu", "gelu_backward", "log", "log10", "log1p", "log2", "log_sigmoid_forward",
    "logsumexp", "pow", "reciprocal", "rsqrt", "sigmoid", "sigmoid_backward", "silu",
    "silu_backward", "sin", "sinh", "softplus", "sqrt", "tan", "tanh", "tanh_backward"};

constexpr std::array<std::string_view, 32> kGpSimdOps = {
    "_embedding_bag", "_index_put_impl", "_unique2", "argmax", "argmin", "argsort", "bernoulli",
    "cummax", "cumprod", "cumsum", "embedding", "embedding_dense_backward", "gather",
    "index", "index_add", "index_copy", "index_fill", "index_put", "index_select",
    "masked_scatter", "masked_select", "multinomial", "nonzero", "normal", "randperm",
    "scatter", "scatter_add", "scatter_reduce", "sort", "topk", "uniform", "unique_consecutive"};

template <size_t N>
bool Contains(const std::array<std::string_view, N>& sorted, std::string_view name) {
  return std::binary_search(sorted.begin(), sorted.end(), name);
}

// "aten::index_put_.out" -> "index_put".
std::string_view BaseName(std::string_view op_name) {
  if (const size_t colons = op_name.rfind("::"); colons != std::string_view::npos) {
    op_name.remove_prefix(colons + 2);
  }
  if (const size_t dot = op_name.find('.'); dot != std::string_view::npos) {
    op_name = op_name.substr(0, dot);
  }
  if (op_name.size() > 1 && op_name.back() == '_') op_name.remove_suffix(1);
  return op_name;
}

}  // namespace

Engine SimEngineOf(CommandKind kind, std::string_view op_name) {
  switch (kind) {
    case CommandKind::kTransfer:
      return Engine::kDma;
    case CommandKind::kCollective:
      return Engine::kCollective;
    case CommandKind::kSync:
      return Engine::kSync;
    case CommandKind::kLaunch:
      break;
  }
  // Eager operators are named by their ATen schema; a compiled graph by its
  // own name, and it runs many operators on several engines.
  if (!op_name.starts_with("aten::")) return Engine::kUnspecified;
  const std::string_view name = BaseName(op_name);
  if (Contains(kTensorOps, name)) return Engine::kTensor;
  if (Contains(kScalarOps, name)) return Engine::kScalar;
  if (Contains(kGpSimdOps, name)) return Engine::kGpSimd;
  return Engine::kVector;
}

}  // namespace neuron::rtd::hal::sim

#include "daemon/hal/sim/nki/internal/arithmetic.h"

#include <ATen/ATen.h>

#include <cmath>
#include <string>

namespace neuron::rtd::nki::internal {
namespace {

at::Tensor AsFloat(const at::Tensor& boolean) { return boolean.to(at::kFloat); }

// d/dx of erf: 2/sqrt(pi) * exp(-x^2).
at::Tensor ErfDerivative(const at::Tensor& x) {
  return (-(x * x)).exp() * (2.0 / std::sqrt(M_PI));
}

// gelu(x) = x * Phi(x); d/dx = Phi(x) + x * phi(x).
at::Tensor GeluDerivative(const at::Tensor& x) {
  const at::Tensor cdf = 0.5 * (1.0 + (x * M_SQRT1_2).erf());
  const at::Tensor pdf = (-(x * x) * 0.5).exp() * (1.0 / std::sqrt(2.0 * M_PI));
  return cdf + x * pdf;
}

// The sigmoid approximation of gelu: x * sigmoid(1.702 x).
constexpr double kGeluSigmoidScale = 1.702;

at::Tensor GeluSigmoidDerivative(const at::Tensor& x) {
  const at::Tensor s = (x * kGeluSigmoidScale).sigmoid();
  return s + x * kGeluSigmoidScale * s * (1.0 - s);
}

at::Tensor SiluDerivative(const at::Tensor& x) {
  const at::Tensor s = x.sigmoid();
  return s * (1.0 + x * (1.0 - s));
}

}  // namespace

bool IsBitOperator(NkiAluOp op) {
  switch (op) {
    case NkiAluOp::kBitwiseAnd:
    case NkiAluOp::kBitwiseOr:
    case NkiAluOp::kBitwiseXor:
    case NkiAluOp::kLeftShift:
    case NkiAluOp::kRightShift:
    case NkiAluOp::kInvert:
      return true;
    default:
      return false;
  }
}

bool IsUnaryOperator(NkiAluOp op) {
  switch (op) {
    case NkiAluOp::kBypass:
    case NkiAluOp::kInvert:
    case NkiAluOp::kAbs:
    case NkiAluOp::kSquare:
    case NkiAluOp::kRelu:
    case NkiAluOp::kRsqrt:
    case NkiAluOp::kReciprocal:
      return true;
    default:
      return false;
  }
}

at::Tensor Alu(NkiAluOp op, const at::Tensor& a, const at::Tensor& b) {
  switch (op) {
    case NkiAluOp::kAdd:
      return a + b;
    case NkiAluOp::kSubtract:
      return a - b;
    case NkiAluOp::kMultiply:
      return a * b;
    case NkiAluOp::kDivide:
      return a / b;
    case NkiAluOp::kMaximum:
      return at::maximum(a, b);
    case NkiAluOp::kMinimum:
      return at::minimum(a, b);
    case NkiAluOp::kPower:
      return at::pow(a, b);
    case NkiAluOp::kEqual:
      return AsFloat(at::eq(a, b));
    case NkiAluOp::kNotEqual:
      return AsFloat(at::ne(a, b));
    case NkiAluOp::kGreater:
      return AsFloat(at::gt(a, b));
    case NkiAluOp::kGreaterEqual:
      return AsFloat(at::ge(a, b));
    case NkiAluOp::kLess:
      return AsFloat(at::lt(a, b));
    case NkiAluOp::kLessEqual:
      return AsFloat(at::le(a, b));
    case NkiAluOp::kAbsMax:
      return at::maximum(a.abs(), b.abs());
    case NkiAluOp::kAbsMin:
      return at::minimum(a.abs(), b.abs());
    case NkiAluOp::kBitwiseAnd:
      return at::bitwise_and(a, b);
    case NkiAluOp::kBitwiseOr:
      return at::bitwise_or(a, b);
    case NkiAluOp::kBitwiseXor:
      return at::bitwise_xor(a, b);
    case NkiAluOp::kLeftShift:
      return at::bitwise_left_shift(a, b).bitwise_and(0xFFFFFFFFLL);
    case NkiAluOp::kRightShift:
      // Logical: the operand's 32 bits as unsigned.
      return at::bitwise_right_shift(a.bitwise_and(0xFFFFFFFFLL), b);
    case NkiAluOp::kInvert:
      return at::bitwise_not(a);
    case NkiAluOp::kLogicalAnd:
      return AsFloat(at::logical_and(a, b));
    case NkiAluOp::kLogicalOr:
      return AsFloat(at::logical_or(a, b));
    case NkiAluOp::kLogicalXor:
      return AsFloat(at::logical_xor(a, b));
    case NkiAluOp::kMod:
      return at::remainder(a, b);
    case NkiAluOp::kFmod:
      return at::fmod(a, b);
    case NkiAluOp::kBypass:
      return a;
    case NkiAluOp::kAbs:
      return a.abs();
    case NkiAluOp::kSquare:
      return a * a;
    case NkiAluOp::kRelu:
      return a.relu();
    case NkiAluOp::kRsqrt:
      return a.rsqrt();
    case NkiAluOp::kReciprocal:
      return a.reciprocal();
    case NkiAluOp::kAverage:
    case NkiAluOp::kCount:
      break;
  }
  TORCH_CHECK(false, "'", std::string(NkiAluOpName(op)), "' is not an elementwise operator");
}

at::Tensor Activate(NkiActivation function, const at::Tensor& x) {
  switch (function) {
    case NkiActivation::kCopy:
      return x;
    case NkiActivation::kExp:
      return x.exp();
    case NkiActivation::kLog:
      return x.log();
    case NkiActivation::kSqrt:
      return x.sqrt();
    case NkiActivation::kRsqrt:
      return x.rsqrt();
    case NkiActivation::kReciprocal:
      return x.reciprocal();
    case NkiActivation::kSin:
      return x.sin();
    case NkiActivation::kCos:
      return x.cos();
    case NkiActivation::kTanh:
      return x.tanh();
    case NkiActivation::kSigmoid:
      return x.sigmoid();
    case NkiActivation::kRelu:
      return x.relu();
    case NkiActivation::kGelu:
      return at::gelu(x);
    case NkiActivation::kGeluApproxTanh:
      return at::gelu(x, "tanh");
    case NkiActivation::kSilu:
      return at::silu(x);
    case NkiActivation::kSquare:
      return x * x;
    case NkiActivation::kAbs:
      return x.abs();
    case NkiActivation::kSign:
      return x.sign();
    case NkiActivation::kErf:
      return x.erf();
    case NkiActivation::kSoftplus:
      return at::softplus(x);
    case NkiActivation::kArctan:
      return x.atan();
    case NkiActivation::kNegative:
      return x.neg();
    case NkiActivation::kGeluDx:
      return GeluDerivative(x);
    case NkiActivation::kGeluApproxSigmoid:
      return x * (x * kGeluSigmoidScale).sigmoid();
    case NkiActivation::kGeluApproxSigmoidDx:
      return GeluSigmoidDerivative(x);
    case NkiActivation::kSiluDx:
      return SiluDerivative(x);
    case NkiActivation::kMish:
      return at::mish(x);
    case NkiActivation::kErfDx:
      return ErfDerivative(x);
    case NkiActivation::kTan:
      return x.tan();
    case NkiActivation::kCeil:
      return x.ceil();
    case NkiActivation::kFloor:
      return x.floor();
    case NkiActivation::kTrunc:
      return x.trunc();
    case NkiActivation::kCount:
      break;
  }
  TORCH_CHECK(false, "unknown activation function");
}

at::Tensor Reduce(NkiAluOp op, const at::Tensor& data, const std::vector<int64_t>& axes) {
  TORCH_CHECK(!axes.empty(), "no axes to reduce");
  for (int64_t axis : axes) {
    TORCH_CHECK(axis >= 0 && axis < data.dim(), "axis ", axis, " is not a dimension of the data (",
                data.dim(), " dimensions)");
  }
  switch (op) {
    case NkiAluOp::kAdd:
      return data.sum(axes, /*keepdim=*/true);
    case NkiAluOp::kAverage:
      return data.mean(axes, /*keepdim=*/true);
    case NkiAluOp::kMultiply: {
      at::Tensor result = data;
      for (int64_t axis : axes) result = result.prod(axis, /*keepdim=*/true);
      return result;
    }
    case NkiAluOp::kMaximum:
      return data.amax(axes, /*keepdim=*/true);
    case NkiAluOp::kMinimum:
      return data.amin(axes, /*keepdim=*/true);
    case NkiAluOp::kAbsMax:
      return data.abs().amax(axes, /*keepdim=*/true);
    case NkiAluOp::kAbsMin:
      return data.abs().amin(axes, /*keepdim=*/true);
    case NkiAluOp::kBitwiseAnd:
    case NkiAluOp::kBitwiseOr:
    case NkiAluOp::kBitwiseXor:
    case NkiAluOp::kLogicalAnd:
    case NkiAluOp::kLogicalOr:
    case NkiAluOp::kLogicalXor: {
      at::Tensor result = data;
      for (int64_t axis : axes) {
        std::vector<at::Tensor> parts = result.unbind(axis);
        at::Tensor folded = parts[0];
        for (size_t i = 1; i < parts.size(); ++i) folded = Alu(op, folded, parts[i]);
        result = folded.unsqueeze(axis);
      }
      return result;
    }
    default:
      break;
  }
  TORCH_CHECK(false, "reduction by '", std::string(NkiAluOpName(op)), "' is not supported");
}

}  // namespace neuron::rtd::nki::internal

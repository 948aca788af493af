// The engines' arithmetic on ATen tensors: ALU operators, the Scalar
// engine's functions and reductions. Pure functions of their inputs; no
// state, any thread.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_NKI_INTERNAL_ARITHMETIC_H_
#define NEURON_RTD_DAEMON_HAL_SIM_NKI_INTERNAL_ARITHMETIC_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "neuron/rtd/nki_kernel.h"

namespace neuron::rtd::nki::internal {

// Whether `op` works on its operands' bits (integers) rather than their
// float32 values.
bool IsBitOperator(NkiAluOp op);

// Whether `op` ignores its second operand.
bool IsUnaryOperator(NkiAluOp op);

// op(a, b), broadcasting as ATen does: float32 for arithmetic (comparisons
// and logic give 1.0 or 0.0); int64 holding the bits for bit operators,
// whose operands must be integer tensors (int64 too).
at::Tensor Alu(NkiAluOp op, const at::Tensor& a, const at::Tensor& b);

// The Scalar engine's function `function` of float32 `x`.
at::Tensor Activate(NkiActivation function, const at::Tensor& x);

// op of `data` over `axes`, keeping them as dimensions of size 1.
at::Tensor Reduce(NkiAluOp op, const at::Tensor& data, const std::vector<int64_t>& axes);

}  // namespace neuron::rtd::nki::internal

#endif  // NEURON_RTD_DAEMON_HAL_SIM_NKI_INTERNAL_ARITHMETIC_H_

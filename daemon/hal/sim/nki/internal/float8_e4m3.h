// NKI's float8_e4m3 (1 sign, 4 exponent, 3 mantissa bits, bias 7, IEEE-like:
// exponent 1111 holds the infinities and NaNs; largest finite 240), which
// torch has not: elements are bytes, converted to and from float32 here.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_NKI_INTERNAL_FLOAT8_E4M3_H_
#define NEURON_RTD_DAEMON_HAL_SIM_NKI_INTERNAL_FLOAT8_E4M3_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace neuron::rtd::nki::internal {

// The float32 values of `bytes` (uint8) read as float8_e4m3.
at::Tensor DecodeFloat8E4m3(const at::Tensor& bytes);

// `values` rounded to the nearest float8_e4m3 (ties to even; past the
// largest finite value by half a step or more: infinity), as uint8 bytes of
// the same shape.
at::Tensor EncodeFloat8E4m3(const at::Tensor& values);

// One value's encoding (the above, element by element).
uint8_t EncodeFloat8E4m3(float value);
float DecodeFloat8E4m3(uint8_t bits);

}  // namespace neuron::rtd::nki::internal

#endif  // NEURON_RTD_DAEMON_HAL_SIM_NKI_INTERNAL_FLOAT8_E4M3_H_

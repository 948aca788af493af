#include "daemon/hal/sim/nki/internal/float8_e4m3.h"

#include <ATen/ATen.h>

#include <array>
#include <cmath>
#include <limits>

namespace neuron::rtd::nki::internal {
namespace {

constexpr int kBias = 7;
constexpr int kMantissaBits = 3;
// Largest finite: 1.875 * 2^7; half a step (2^4 / 2) above it rounds to
// infinity.
constexpr float kLargest = 240.0f;
constexpr float kOverflow = 248.0f;
constexpr int kMinNormalExponent = 1 - kBias;

const std::array<float, 256>& Table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> values{};
    for (int bits = 0; bits < 256; ++bits) {
      const float sign = (bits & 0x80) != 0 ? -1.0f : 1.0f;
      const int exponent = (bits >> kMantissaBits) & 0xF;
      const int mantissa = bits & 0x7;
      float magnitude;
      if (exponent == 0xF) {
        magnitude = mantissa == 0 ? std::numeric_limits<float>::infinity()
                                  : std::numeric_limits<float>::quiet_NaN();
      } else if (exponent == 0) {
        magnitude = std::ldexp(static_cast<float>(mantissa), kMinNormalExponent - kMantissaBits);
      } else {
        magnitude = std::ldexp(1.0f + mantissa / 8.0f, exponent - kBias);
      }
      values[bits] = sign * magnitude;
    }
    return values;
  }();
  return table;
}

}  // namespace

float DecodeFloat8E4m3(uint8_t bits) { return Table()[bits]; }

uint8_t EncodeFloat8E4m3(float value) {
  const uint8_t sign = std::signbit(value) ? 0x80 : 0;
  const float magnitude = std::fabs(value);
  if (std::isnan(value)) return sign | 0x7F;
  if (magnitude >= kOverflow) return sign | 0x78;
  // Steps of 2^(e - 3) for a value of exponent e, never finer than the
  // subnormals'.
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude = m * 2^exponent, m in [0.5, 1)
  const int step_exponent = std::max(exponent - 1, kMinNormalExponent) - kMantissaBits;
  const float steps = std::nearbyint(std::ldexp(magnitude, -step_exponent));
  const float rounded = std::ldexp(steps, step_exponent);
  if (rounded > kLargest) return sign | 0x78;
  if (rounded < std::ldexp(1.0f, kMinNormalExponent)) {
    return sign | static_cast<uint8_t>(steps);  // subnormal (or zero)
  }
  int rounded_exponent = 0;
  const float fraction = std::frexp(rounded, &rounded_exponent);  // [0.5, 1)
  const int biased = rounded_exponent - 1 + kBias;
  const int mantissa = static_cast<int>(std::lround((fraction * 2.0f - 1.0f) * 8.0f));
  return sign | static_cast<uint8_t>((biased << kMantissaBits) | mantissa);
}

at::Tensor DecodeFloat8E4m3(const at::Tensor& bytes) {
  const at::Tensor table = at::from_blob(const_cast<float*>(Table().data()), {256}, at::kFloat);
  return table.index_select(0, bytes.reshape(-1).to(at::kLong)).reshape(bytes.sizes());
}

at::Tensor EncodeFloat8E4m3(const at::Tensor& values) {
  const at::Tensor source = values.to(at::kFloat).contiguous();
  at::Tensor bytes = at::empty(source.sizes(), at::kByte);
  const float* in = source.const_data_ptr<float>();
  uint8_t* out = bytes.data_ptr<uint8_t>();
  for (int64_t i = 0; i < source.numel(); ++i) out[i] = EncodeFloat8E4m3(in[i]);
  return bytes;
}

}  // namespace neuron::rtd::nki::internal

#include "daemon/collectives/host_reduce.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "neuron/rtd/abi/command_ring.h"

namespace neuron::rtd::collectives {
namespace {

// Wrapping arithmetic for signed integers (no undefined overflow).
template <typename T>
T WrappingAdd(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <typename T>
T WrappingMultiply(T a, T b) {
  using U = std::make_unsigned_t<T>;
  // Promote to unsigned int at least, so narrow types do not overflow int.
  using Wide = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
  return static_cast<T>(static_cast<U>(static_cast<Wide>(static_cast<U>(a)) *
                                       static_cast<Wide>(static_cast<U>(b))));
}

template <typename T>
void ReduceIntegers(hal::ReduceOp op, T* __restrict destination, const T* __restrict source,
                    uint64_t count) {
  switch (op) {
    case hal::ReduceOp::kProduct:
      for (uint64_t i = 0; i < count; ++i) destination[i] = WrappingMultiply(destination[i], source[i]);
      return;
    case hal::ReduceOp::kMin:
      for (uint64_t i = 0; i < count; ++i) destination[i] = std::min(destination[i], source[i]);
      return;
    case hal::ReduceOp::kMax:
      for (uint64_t i = 0; i < count; ++i) destination[i] = std::max(destination[i], source[i]);
      return;
    default:
      for (uint64_t i = 0; i < count; ++i) destination[i] = WrappingAdd(destination[i], source[i]);
      return;
  }
}

float Apply(hal::ReduceOp op, float d, float s) {
  switch (op) {
    case hal::ReduceOp::kProduct:
      return d * s;
    case hal::ReduceOp::kMin:
      return std::isnan(d) || std::isnan(s) ? NAN : std::min(d, s);
    case hal::ReduceOp::kMax:
      return std::isnan(d) || std::isnan(s) ? NAN : std::max(d, s);
    default:
      return d + s;
  }
}

template <float (*kToFloat)(uint16_t), uint16_t (*kFromFloat)(float)>
void ReduceNarrowFloats(hal::ReduceOp op, uint16_t* destination, const uint16_t* source,
                        uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) {
    destination[i] = kFromFloat(Apply(op, kToFloat(destination[i]), kToFloat(source[i])));
  }
}

template <typename T>
void FinishIntegers(hal::ReduceOp op, T* buffer, uint64_t count, uint32_t ranks) {
  if (op != hal::ReduceOp::kAvg) return;
  for (uint64_t i = 0; i < count; ++i) buffer[i] = static_cast<T>(buffer[i] / static_cast<T>(ranks));
}

float Finish(hal::ReduceOp op, float value, uint32_t ranks, double scale) {
  return op == hal::ReduceOp::kAvg ? value / static_cast<float>(ranks)
                                   : value * static_cast<float>(scale);
}

}  // namespace

float HalfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {
      // Subnormal: normalise it.
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t FloatToHalf(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {
    return static_cast<uint16_t>(sign | (magnitude > 0x7f800000u ? 0x7e00u : 0x7c00u));
  }
  // 65520 and above round to infinity.
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude < 0x38800000u) {
    // Below the smallest normal half: a multiple of 2^-24, rounded to even.
    const float scaled = std::bit_cast<float>(magnitude) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  const uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
}

float BFloat16ToFloat(uint16_t value) { return std::bit_cast<float>(uint32_t{value} << 16); }

uint16_t FloatToBFloat16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

hal::ElementType ElementTypeOfDtype(uint32_t dtype) {
  switch (dtype) {
    case NEURON_RTD_DTYPE_BFLOAT16:
      return hal::ElementType::kBFloat16;
    case NEURON_RTD_DTYPE_FLOAT16:
      return hal::ElementType::kFloat16;
    case NEURON_RTD_DTYPE_INT8:
      return hal::ElementType::kInt8;
    case NEURON_RTD_DTYPE_UINT8:
      return hal::ElementType::kUInt8;
    case NEURON_RTD_DTYPE_INT32:
      return hal::ElementType::kInt32;
    case NEURON_RTD_DTYPE_INT64:
      return hal::ElementType::kInt64;
    case NEURON_RTD_DTYPE_BOOL:
      return hal::ElementType::kBool;
    default:
      return hal::ElementType::kFloat32;
  }
}

hal::ReduceOp ReduceOpOfWire(uint32_t reduce_op) {
  switch (reduce_op) {
    case NEURON_RTD_REDUCE_PRODUCT:
      return hal::ReduceOp::kProduct;
    case NEURON_RTD_REDUCE_MIN:
      return hal::ReduceOp::kMin;
    case NEURON_RTD_REDUCE_MAX:
      return hal::ReduceOp::kMax;
    case NEURON_RTD_REDUCE_AVG:
      return hal::ReduceOp::kAvg;
    case NEURON_RTD_REDUCE_PREMUL_SUM:
      return hal::ReduceOp::kPremulSum;
    default:
      return hal::ReduceOp::kSum;
  }
}

hal::ReduceOp CombiningOp(hal::ReduceOp op) {
  return op == hal::ReduceOp::kAvg || op == hal::ReduceOp::kPremulSum ? hal::ReduceOp::kSum : op;
}

void ReduceOnHost(hal::ReduceOp op, hal::ElementType type, void* destination, const void* source,
                  uint64_t count) {
  const uint32_t width = hal::ElementBytes(type);
  if (reinterpret_cast<uintptr_t>(destination) % width != 0 ||
      reinterpret_cast<uintptr_t>(source) % width != 0) {
    // Elements must be read and written aligned. The pieces other hosts
    // send follow a header of a multiple of 8 bytes, so this copy is for
    // buffers the caller did not align.
    std::vector<uint8_t> aligned_destination(static_cast<const uint8_t*>(destination),
                                             static_cast<const uint8_t*>(destination) +
                                                 count * width);
    const std::vector<uint8_t> aligned_source(static_cast<const uint8_t*>(source),
                                              static_cast<const uint8_t*>(source) + count * width);
    ReduceOnHost(op, type, aligned_destination.data(), aligned_source.data(), count);
    std::memcpy(destination, aligned_destination.data(), aligned_destination.size());
    return;
  }
  op = CombiningOp(op);
  switch (type) {
    case hal::ElementType::kFloat32: {
      // One loop per op (kept free of branches so that it vectorizes): the
      // sums of all-reduces are what the fabric's receive path spends on.
      float* __restrict d = static_cast<float*>(destination);
      const float* __restrict s = static_cast<const float*>(source);
      switch (op) {
        case hal::ReduceOp::kSum:
          for (uint64_t i = 0; i < count; ++i) d[i] += s[i];
          return;
        case hal::ReduceOp::kProduct:
          for (uint64_t i = 0; i < count; ++i) d[i] *= s[i];
          return;
        default:
          for (uint64_t i = 0; i < count; ++i) d[i] = Apply(op, d[i], s[i]);
          return;
      }
    }
    case hal::ElementType::kBFloat16:
      ReduceNarrowFloats<BFloat16ToFloat, FloatToBFloat16>(
          op, static_cast<uint16_t*>(destination), static_cast<const uint16_t*>(source), count);
      return;
    case hal::ElementType::kFloat16:
      ReduceNarrowFloats<HalfToFloat, FloatToHalf>(op, static_cast<uint16_t*>(destination),
                                                   static_cast<const uint16_t*>(source), count);
      return;
    case hal::ElementType::kInt8:
      ReduceIntegers(op, static_cast<int8_t*>(destination), static_cast<const int8_t*>(source),
                     count);
      return;
    case hal::ElementType::kUInt8:
      ReduceIntegers(op, static_cast<uint8_t*>(destination), static_cast<const uint8_t*>(source),
                     count);
      return;
    case hal::ElementType::kInt32:
      ReduceIntegers(op, static_cast<int32_t*>(destination), static_cast<const int32_t*>(source),
                     count);
      return;
    case hal::ElementType::kInt64:
      ReduceIntegers(op, static_cast<int64_t*>(destination), static_cast<const int64_t*>(source),
                     count);
      return;
    case hal::ElementType::kBool: {
      auto* d = static_cast<uint8_t*>(destination);
      const auto* s = static_cast<const uint8_t*>(source);
      const bool conjunction = op == hal::ReduceOp::kProduct || op == hal::ReduceOp::kMin;
      for (uint64_t i = 0; i < count; ++i) {
        d[i] = conjunction ? (d[i] != 0 && s[i] != 0) : (d[i] != 0 || s[i] != 0);
      }
      return;
    }
  }
}

void FinishOnHost(hal::ReduceOp op, hal::ElementType type, void* buffer, uint64_t count,
                  uint32_t ranks, double scale) {
  if (op != hal::ReduceOp::kAvg && op != hal::ReduceOp::kPremulSum) return;
  switch (type) {
    case hal::ElementType::kFloat32: {
      auto* values = static_cast<float*>(buffer);
      for (uint64_t i = 0; i < count; ++i) values[i] = Finish(op, values[i], ranks, scale);
      return;
    }
    case hal::ElementType::kBFloat16: {
      auto* values = static_cast<uint16_t*>(buffer);
      for (uint64_t i = 0; i < count; ++i) {
        values[i] = FloatToBFloat16(Finish(op, BFloat16ToFloat(values[i]), ranks, scale));
      }
      return;
    }
    case hal::ElementType::kFloat16: {
      auto* values = static_cast<uint16_t*>(buffer);
      for (uint64_t i = 0; i < count; ++i) {
        values[i] = FloatToHalf(Finish(op, HalfToFloat(values[i]), ranks, scale));
      }
      return;
    }
    case hal::ElementType::kInt8:
      FinishIntegers(op, static_cast<int8_t*>(buffer), count, ranks);
      return;
    case hal::ElementType::kUInt8:
      FinishIntegers(op, static_cast<uint8_t*>(buffer), count, ranks);
      return;
    case hal::ElementType::kInt32:
      FinishIntegers(op, static_cast<int32_t*>(buffer), count, ranks);
      return;
    case hal::ElementType::kInt64:
      FinishIntegers(op, static_cast<int64_t*>(buffer), count, ranks);
      return;
    case hal::ElementType::kBool:
      return;
  }
}

}  // namespace neuron::rtd::collectives

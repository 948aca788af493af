// What the collective engine computes: an element-wise reduction of buffers
// that may lie on any device of one backend (the ranks of a communicator
// each hold their own).
#ifndef NEURON_RTD_DAEMON_HAL_REDUCTION_H_
#define NEURON_RTD_DAEMON_HAL_REDUCTION_H_

#include <cstdint>
#include <string_view>

namespace neuron::rtd::hal {

class Device;

enum class ReduceOp { kSum, kProduct, kMin, kMax, kAvg, kPremulSum };

enum class ElementType { kFloat32, kBFloat16, kFloat16, kInt8, kUInt8, kInt32, kInt64, kBool };

// Device memory of a reduction's operand.
struct ReduceOperand {
  Device* device = nullptr;
  uint64_t address = 0;
};

struct Reduction {
  ReduceOp op = ReduceOp::kSum;
  ElementType type = ElementType::kFloat32;
  uint64_t count = 0;
  // kPremulSum multiplies each operand by it before summing.
  double scale = 0;
};

uint32_t ElementBytes(ElementType type);
std::string_view ReduceOpName(ReduceOp op);

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_REDUCTION_H_

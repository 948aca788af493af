#include "daemon/hal/reduction.h"

namespace neuron::rtd::hal {

uint32_t ElementBytes(ElementType type) {
  switch (type) {
    case ElementType::kFloat32:
    case ElementType::kInt32:
      return 4;
    case ElementType::kBFloat16:
    case ElementType::kFloat16:
      return 2;
    case ElementType::kInt8:
    case ElementType::kUInt8:
    case ElementType::kBool:
      return 1;
    case ElementType::kInt64:
      return 8;
  }
  return 0;
}

std::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "SUM";
    case ReduceOp::kProduct:
      return "PRODUCT";
    case ReduceOp::kMin:
      return "MIN";
    case ReduceOp::kMax:
      return "MAX";
    case ReduceOp::kAvg:
      return "AVG";
    case ReduceOp::kPremulSum:
      return "PREMUL_SUM";
  }
  return "unknown";
}

}  // namespace neuron::rtd::hal

#include "neuron/rtd/eager_op.h"

#include "neuron/rtd/graph_plan.h"

namespace neuron::rtd {

uint32_t ElementBytes(int32_t dtype) {
  switch (dtype) {
    case 0:   // uint8
    case 1:   // int8
    case 11:  // bool
    case 23:  // float8_e5m2
    case 24:  // float8_e4m3fn
    case 25:  // float8_e5m2fnuz
    case 26:  // float8_e4m3fnuz
    case 44:  // float8_e8m0fnu
      return 1;
    case 2:   // int16
    case 27:  // uint16
    case 5:   // float16
    case 15:  // bfloat16
      return 2;
    case 3:   // int32
    case 28:  // uint32
    case 6:   // float32
    case 8:   // complex32
      return 4;
    case 4:   // int64
    case 29:  // uint64 (torch.hash_tensor's result)
    case 7:   // float64
    case 9:   // complex64
      return 8;
    case 10:  // complex128
      return 16;
    default:
      return 0;
  }
}

uint64_t TensorExtentBytes(const TensorLayout& layout) {
  uint64_t last = 0;
  for (size_t dim = 0; dim < layout.sizes.size(); ++dim) {
    if (layout.sizes[dim] == 0) return 0;
    last += static_cast<uint64_t>(layout.sizes[dim] - 1) * static_cast<uint64_t>(layout.strides[dim]);
  }
  return (last + 1) * ElementBytes(layout.dtype);
}

uint64_t NodeResultCount(const GraphNode& node) {
  uint64_t count = 0;
  for (int32_t length : node.return_lengths) {
    count += length <= kTensorReturn ? 1 : static_cast<uint64_t>(length);
  }
  return count;
}

}  // namespace neuron::rtd

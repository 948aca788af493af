// One ATen operator call with fixed argument layouts, as the daemon runs it
// for an eager-op executable (proto/neuron/rtd/v1/executable.proto, decoded
// and checked by daemon/exec). Plain data: no Protobuf, no PyTorch.
#ifndef NEURON_RTD_DAEMON_HAL_EAGER_OP_H_
#define NEURON_RTD_DAEMON_HAL_EAGER_OP_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace neuron::rtd::hal {

// A tensor whose data starts at LAUNCH address `address_index`. `dtype` is a
// c10::ScalarType number.
struct TensorLayout {
  int32_t dtype = 0;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  uint32_t address_index = 0;
};

// A per-call scalar read from the LAUNCH scalars.
struct ImmediateScalar {
  enum class Kind { kInt64, kDouble, kBool };
  Kind kind = Kind::kInt64;
  uint32_t offset = 0;
};

// A random generator seeded with the uint64 at `offset` in the LAUNCH scalars.
struct GeneratorSeed {
  uint32_t offset = 0;
};

struct NoneValue {};
struct ScalarTypeValue {
  int32_t dtype = 0;
};

using OpValue = std::variant<NoneValue, TensorLayout, int64_t, double, bool, std::vector<int64_t>,
                             ScalarTypeValue, std::string, std::vector<TensorLayout>,
                             ImmediateScalar, GeneratorSeed>;

struct EagerOpPlan {
  std::string name;      // "aten::add"
  std::string overload;  // "Tensor"
  std::vector<OpValue> arguments;
  std::vector<TensorLayout> outputs;
};

// Bytes from a tensor's first element to one past its last: what a LAUNCH
// address must cover. 0 for an empty tensor. The layout must have been
// checked (daemon/exec bounds sizes and strides so that this cannot overflow).
uint64_t TensorExtentBytes(const TensorLayout& layout);

// Bytes of one element of c10::ScalarType `dtype`; 0 for a type eager ops do
// not take.
uint32_t ElementBytes(int32_t dtype);

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_EAGER_OP_H_

// One ATen operator call with fixed argument layouts, as plain data: what a
// client describes and the daemon runs for an eager-op executable. The wire
// form is neuron.rtd.v1.EagerOp (v1/executable.proto); libneuronrt encodes
// this struct into it, daemon/exec decodes and checks it back. No Protobuf,
// no PyTorch, so either side may include it anywhere.
#ifndef NEURON_RTD_EAGER_OP_H_
#define NEURON_RTD_EAGER_OP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace neuron::rtd {

// The most dimensions a tensor of an executable has (PyTorch's reductions'
// limit; PyTorch's tensors may have more, and such calls run elsewhere).
inline constexpr int kMaxTensorDims = 64;

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
  enum class Kind { kInt64, kDouble, kBool, kComplexDouble };
  Kind kind = Kind::kInt64;
  uint32_t offset = 0;
};

// The bytes one scalar of `kind` takes in the LAUNCH scalars.
constexpr uint32_t ImmediateScalarBytes(ImmediateScalar::Kind kind) {
  return kind == ImmediateScalar::Kind::kComplexDouble ? 16 : 8;
}

// `count` per-call scalars of one kind, ImmediateScalarBytes(kind) apart
// from `offset`.
struct ImmediateScalarList {
  ImmediateScalar::Kind kind = ImmediateScalar::Kind::kDouble;
  uint32_t offset = 0;
  uint32_t count = 0;
};

// A random generator seeded with the uint64 at `offset` in the LAUNCH scalars.
struct GeneratorSeed {
  uint32_t offset = 0;
};

struct NoneValue {};
struct ScalarTypeValue {
  int32_t dtype = 0;
};
// The device the operator runs on (a factory's `device=`): the daemon puts
// its own in.
struct DeviceValue {};

using OptionalTensorLayouts = std::vector<std::optional<TensorLayout>>;

// In a graph node only (graph_plan.h): a tensor value of the graph, by
// number; an eager op has none.
struct GraphValue {
  uint32_t id = 0;
  friend bool operator==(const GraphValue&, const GraphValue&) = default;
};
using GraphValues = std::vector<GraphValue>;
using OptionalGraphValues = std::vector<std::optional<GraphValue>>;

using OpValue =
    std::variant<NoneValue, TensorLayout, int64_t, double, bool, std::vector<int64_t>,
                 ScalarTypeValue, std::string, std::vector<TensorLayout>, ImmediateScalar,
                 GeneratorSeed, std::vector<bool>, std::vector<double>, OptionalTensorLayouts,
                 ImmediateScalarList, DeviceValue, GraphValue, GraphValues, OptionalGraphValues>;

struct EagerOpPlan {
  std::string name;      // "aten::add"
  std::string overload;  // "out"
  std::vector<OpValue> arguments;
  // Tensors the operator returns are copied into these; empty when the
  // operator writes its arguments (in-place and out= overloads).
  std::vector<TensorLayout> outputs;
  // Positions, among the tensors the operator returns (lists flattened), of
  // results it leaves undefined (a backward whose output_mask skips them):
  // they have no entry in `outputs`. Ascending.
  std::vector<uint32_t> undefined_results;
  // Random operators without a Generator argument (native_dropout) draw from
  // the device's default generator: it is seeded from here for the call.
  std::optional<GeneratorSeed> default_generator;
};

// Bytes from a tensor's first element to one past its last: what a LAUNCH
// address must cover. 0 for an empty tensor. The layout must have been
// checked (daemon/exec bounds sizes and strides so that this cannot overflow).
uint64_t TensorExtentBytes(const TensorLayout& layout);

// Bytes of one element of c10::ScalarType `dtype`; 0 for a type eager ops do
// not take.
uint32_t ElementBytes(int32_t dtype);

}  // namespace neuron::rtd

#endif  // NEURON_RTD_EAGER_OP_H_

// Building eager-op executables the way a client serializes them.
#ifndef NEURON_TESTS_E2E_EAGER_OP_BUILDERS_H_
#define NEURON_TESTS_E2E_EAGER_OP_BUILDERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "neuron/rtd/v1/executable.pb.h"

namespace neuron::testing {

inline rtd::v1::TensorSpec Spec(std::vector<int64_t> sizes, std::vector<int64_t> strides,
                                uint32_t address,
                                rtd::v1::ScalarType dtype = rtd::v1::SCALAR_TYPE_FLOAT32) {
  rtd::v1::TensorSpec spec;
  spec.set_dtype(dtype);
  for (int64_t size : sizes) spec.add_sizes(size);
  for (int64_t stride : strides) spec.add_strides(stride);
  spec.set_address_index(address);
  return spec;
}

inline std::string Body(const rtd::v1::EagerOp& op) {
  rtd::v1::ExecutableBody body;
  *body.mutable_eager_op() = op;
  return body.SerializeAsString();
}

// aten::neg of `size` contiguous floats, address 0 to address 1: a distinct
// executable per size.
inline std::string NegBody(int64_t size) {
  rtd::v1::EagerOp neg;
  neg.set_name("aten::neg");
  *neg.add_arguments()->mutable_tensor() = Spec({size}, {1}, 0);
  *neg.add_outputs() = Spec({size}, {1}, 1);
  return Body(neg);
}

}  // namespace neuron::testing

#endif  // NEURON_TESTS_E2E_EAGER_OP_BUILDERS_H_

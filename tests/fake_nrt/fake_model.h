// What a test NEFF asks the fake libnrt to run: its member "neff.json" lists
// the model's IO tensors and one small float32 operation the fake computes on
// the CPU. Real NEFFs hold engine programs instead; everything else about a
// test NEFF (the header, the gzip tar) is the real container format.
//
// neff.json: {"io": [{"name": "a", "usage": "input" | "output",
//                     "dtype": "float32", "shape": [4, 4]}, ...],
//             "op": "copy" | "add" | "scale" | "matmul", "factor": 2.0}
// copy: out0 = in0; add: out0 = in0 + in1; scale: out0 = factor * in0;
// matmul: out0 = in0 @ in1 (2-D).
#ifndef NEURON_RTD_TESTS_FAKE_NRT_FAKE_MODEL_H_
#define NEURON_RTD_TESTS_FAKE_NRT_FAKE_MODEL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace neuron::rtd::fake_nrt {

struct FakeTensorSpec {
  std::string name;
  bool input = true;
  std::string dtype;  // "float32" only
  std::vector<uint32_t> shape;

  uint64_t bytes() const;
};

struct FakeModel {
  std::vector<FakeTensorSpec> io;  // inputs and outputs, in the NEFF's order
  std::string op;
  double factor = 1;
  uint32_t lnc_size = 0;
};

// The model of NEFF `bytes` (container and neff.json checked).
absl::StatusOr<FakeModel> ParseFakeModel(std::string_view bytes);

// Runs `model` on float32 buffers: `inputs` and `outputs` in the order of
// the model's inputs and outputs.
void RunFakeModel(const FakeModel& model, const std::vector<const float*>& inputs,
                  const std::vector<float*>& outputs);

}  // namespace neuron::rtd::fake_nrt

#endif  // NEURON_RTD_TESTS_FAKE_NRT_FAKE_MODEL_H_

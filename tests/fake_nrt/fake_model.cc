#include "tests/fake_nrt/fake_model.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "daemon/exec/neff_container.h"

namespace neuron::rtd::fake_nrt {

uint64_t FakeTensorSpec::bytes() const {
  uint64_t elements = 1;
  for (uint32_t size : shape) elements *= size;
  return elements * sizeof(float);
}

absl::StatusOr<FakeModel> ParseFakeModel(std::string_view bytes) {
  absl::StatusOr<exec::NeffContents> contents = exec::ReadNeff(bytes);
  if (!contents.ok()) return contents.status();
  const exec::NeffMember* json = contents->Find("neff.json");
  if (json == nullptr) return absl::InvalidArgumentError("the NEFF has no neff.json");
  FakeModel model;
  model.lnc_size = contents->header.lnc_size;
  try {
    const nlohmann::json parsed = nlohmann::json::parse(json->data);
    for (const nlohmann::json& tensor : parsed.at("io")) {
      FakeTensorSpec spec;
      spec.name = tensor.at("name").get<std::string>();
      spec.input = tensor.at("usage").get<std::string>() == "input";
      spec.dtype = tensor.value("dtype", "float32");
      spec.shape = tensor.at("shape").get<std::vector<uint32_t>>();
      if (spec.dtype != "float32") {
        return absl::InvalidArgumentError("the fake runs float32 models only");
      }
      model.io.push_back(std::move(spec));
    }
    model.op = parsed.at("op").get<std::string>();
    model.factor = parsed.value("factor", 1.0);
  } catch (const std::exception& error) {
    return absl::InvalidArgumentError(absl::StrFormat("neff.json: %s", error.what()));
  }
  std::vector<const FakeTensorSpec*> inputs, outputs;
  for (const FakeTensorSpec& spec : model.io) (spec.input ? inputs : outputs).push_back(&spec);
  const size_t arity = model.op == "add" || model.op == "matmul" ? 2 : 1;
  if (model.op != "copy" && model.op != "add" && model.op != "scale" && model.op != "matmul") {
    return absl::InvalidArgumentError(absl::StrFormat("neff.json: unknown op %s", model.op));
  }
  if (inputs.size() != arity || outputs.size() != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "neff.json: %s takes %d inputs and 1 output", model.op, arity));
  }
  if (model.op == "matmul") {
    const auto& a = inputs[0]->shape;
    const auto& b = inputs[1]->shape;
    const auto& c = outputs[0]->shape;
    if (a.size() != 2 || b.size() != 2 || c.size() != 2 || a[1] != b[0] || c[0] != a[0] ||
        c[1] != b[1]) {
      return absl::InvalidArgumentError("neff.json: matmul shapes do not fit");
    }
  } else {
    for (const FakeTensorSpec* input : inputs) {
      if (input->bytes() != outputs[0]->bytes()) {
        return absl::InvalidArgumentError("neff.json: inputs and output differ in size");
      }
    }
  }
  return model;
}

void RunFakeModel(const FakeModel& model, const std::vector<const float*>& inputs,
                  const std::vector<float*>& outputs) {
  std::vector<const FakeTensorSpec*> output_specs;
  std::vector<const FakeTensorSpec*> input_specs;
  for (const FakeTensorSpec& spec : model.io) (spec.input ? input_specs : output_specs).push_back(&spec);
  const uint64_t count = output_specs[0]->bytes() / sizeof(float);
  float* out = outputs[0];
  if (model.op == "copy") {
    for (uint64_t i = 0; i < count; ++i) out[i] = inputs[0][i];
  } else if (model.op == "add") {
    for (uint64_t i = 0; i < count; ++i) out[i] = inputs[0][i] + inputs[1][i];
  } else if (model.op == "scale") {
    for (uint64_t i = 0; i < count; ++i) out[i] = static_cast<float>(model.factor) * inputs[0][i];
  } else {
    const uint32_t rows = input_specs[0]->shape[0];
    const uint32_t inner = input_specs[0]->shape[1];
    const uint32_t columns = input_specs[1]->shape[1];
    for (uint32_t r = 0; r < rows; ++r) {
      for (uint32_t c = 0; c < columns; ++c) {
        float sum = 0;
        for (uint32_t k = 0; k < inner; ++k) sum += inputs[0][r * inner + k] * inputs[1][k * columns + c];
        out[r * columns + c] = sum;
      }
    }
  }
}

}  // namespace neuron::rtd::fake_nrt

#include "csrc/aten/internal/DefaultDtype.h"

#include <ATen/core/Tensor.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/ScalarType.h>

#include <exception>
#include <optional>
#include <vector>

#include "csrc/aten/internal/MetaTensors.h"

namespace torch_neuronx::internal {
namespace {

// Tensors read as indices, masks or conditions keep their dtype.
bool KeepsItsDtype(const c10::Argument& argument, bool is_index) {
  return is_index || argument.name() == "mask" || argument.name() == "condition";
}

}  // namespace

bool DefaultDtypeIsNotDaemons() {
  return c10::typeMetaToScalarType(c10::get_default_dtype()) != at::kFloat;
}

void PromoteIntegerInputsToDefaultDtype(const c10::OperatorHandle& op, const OpInfo& info,
                                        torch::jit::Stack& arguments) {
  if (!DefaultDtypeIsNotDaemons()) return;
  const std::vector<c10::Argument>& schema = op.schema().arguments();
  std::vector<size_t> integers;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (info.kinds[i] != ArgKind::kTensor || !arguments[i].isTensor()) continue;
    const at::Tensor& tensor = arguments[i].toTensor();
    const bool written = schema[i].alias_info() != nullptr && schema[i].alias_info()->isWrite();
    // An in-place result keeps its tensor's dtype.
    if (written && !schema[i].kwarg_only()) return;
    if (!tensor.defined() || written || KeepsItsDtype(schema[i], info.is_index[i])) continue;
    // A floating or complex input decides the result's dtype itself.
    if (!at::isIntegralType(tensor.scalar_type(), /*includeBool=*/true)) return;
    integers.push_back(i);
  }
  if (integers.empty()) return;
  torch::jit::Stack meta = ToMetaStack(arguments, /*keep_offset=*/false);
  try {
    if (RunMeta(op, meta) != MetaOutcome::kOk) return;
  } catch (const std::exception&) {
    // The launch infers the outputs again and raises the user's error there.
    return;
  }
  const at::ScalarType default_dtype = c10::typeMetaToScalarType(c10::get_default_dtype());
  std::optional<at::ScalarType> result;
  for (const c10::IValue& value : meta) {
    if (!value.isTensor()) continue;
    const at::ScalarType dtype = value.toTensor().scalar_type();
    if (dtype == default_dtype || dtype == c10::toComplexType(default_dtype)) {
      result = dtype;
      break;
    }
  }
  if (!result) return;
  for (size_t i : integers) arguments[i] = arguments[i].toTensor().to(*result);
}

}  // namespace torch_neuronx::internal

#include "csrc/aten/internal/OpInfo.h"

#include <algorithm>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"

namespace torch_neuronx::internal {
namespace {

ArgKind KindOf(const c10::TypePtr& declared) {
  c10::TypePtr type = declared;
  if (auto optional = type->cast<c10::OptionalType>()) type = optional->getElementType();
  switch (type->kind()) {
    case c10::TypeKind::TensorType:
      return ArgKind::kTensor;
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
      return ArgKind::kInt;
    case c10::TypeKind::FloatType:
      return ArgKind::kFloat;
    case c10::TypeKind::BoolType:
      return ArgKind::kBool;
    case c10::TypeKind::NumberType:
      return ArgKind::kScalar;
    case c10::TypeKind::ScalarTypeType:
      return ArgKind::kScalarType;
    case c10::TypeKind::LayoutType:
    case c10::TypeKind::MemoryFormatType:
      return ArgKind::kIntLike;
    case c10::TypeKind::DeviceObjType:
      return ArgKind::kDevice;
    case c10::TypeKind::StringType:
      return ArgKind::kString;
    case c10::TypeKind::GeneratorType:
      return ArgKind::kGenerator;
    case c10::TypeKind::ListType: {
      c10::TypePtr element = type->castRaw<c10::ListType>()->getElementType();
      if (auto optional = element->cast<c10::OptionalType>()) {
        return optional->getElementType()->kind() == c10::TypeKind::TensorType
                   ? ArgKind::kOptionalTensorList
                   : ArgKind::kUnsupported;
      }
      switch (element->kind()) {
        case c10::TypeKind::TensorType:
          return ArgKind::kTensorList;
        case c10::TypeKind::IntType:
        case c10::TypeKind::SymIntType:
          return ArgKind::kIntList;
        case c10::TypeKind::FloatType:
          return ArgKind::kFloatList;
        case c10::TypeKind::BoolType:
          return ArgKind::kBoolList;
        case c10::TypeKind::NumberType:
          return ArgKind::kScalarList;
        default:
          return ArgKind::kUnsupported;
      }
    }
    default:
      return ArgKind::kUnsupported;
  }
}

bool SameAliasSet(const c10::AliasInfo& a, const c10::AliasInfo& b) {
  return a.beforeSets() == b.beforeSets();
}

// Name -> overload names, from every registered operator (built once).
const absl::flat_hash_map<std::string, std::vector<std::string>>& OverloadsByName() {
  static const auto* overloads = [] {
    auto* map = new absl::flat_hash_map<std::string, std::vector<std::string>>();
    for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
      (*map)[name.name].push_back(name.overload_name);
    }
    return map;
  }();
  return *overloads;
}

// The other overloads of `schema`'s operator, "out" first (the
// conventional name of an out= overload).
std::vector<c10::OperatorHandle> OtherOverloads(const c10::FunctionSchema& schema) {
  std::vector<c10::OperatorHandle> handles;
  const auto& overloads = OverloadsByName();
  auto it = overloads.find(schema.name());
  if (it == overloads.end()) return handles;
  for (const std::string& overload : it->second) {
    if (overload == schema.overload_name()) continue;
    std::optional<c10::OperatorHandle> handle =
        c10::Dispatcher::singleton().findOp({schema.name(), overload});
    if (handle && handle->hasSchema()) handles.push_back(*handle);
  }
  std::stable_partition(handles.begin(), handles.end(), [](const c10::OperatorHandle& handle) {
    return handle.schema().overload_name() == "out";
  });
  return handles;
}

void FindOutVariant(const c10::FunctionSchema& schema, OpInfo& info) {
  const size_t argument_count = schema.arguments().size();
  const size_t return_count = schema.returns().size();
  for (const c10::OperatorHandle& handle : OtherOverloads(schema)) {
    const c10::FunctionSchema& candidate = handle.schema();
    if (candidate.arguments().size() != argument_count + return_count) continue;
    bool matches = true;
    for (size_t i = 0; i < argument_count && matches; ++i) {
      const c10::Argument& ours = schema.arguments()[i];
      const c10::Argument& theirs = candidate.arguments()[i];
      matches = ours.name() == theirs.name() && *ours.type() == *theirs.type();
    }
    for (size_t i = argument_count; i < argument_count + return_count && matches; ++i) {
      const c10::Argument& out = candidate.arguments()[i];
      const c10::TypePtr& result = schema.returns()[i - argument_count].type();
      const bool same_kind = result->kind() == c10::TypeKind::TensorType
                                 ? out.type()->kind() == c10::TypeKind::TensorType
                                 : IsTensorListType(out.type());
      matches = out.alias_info() != nullptr && out.alias_info()->isWrite() && same_kind;
    }
    if (!matches) continue;
    info.out_variant = handle;
    return;
  }
}

// Structured kernels share one meta function between their functional and
// out= overloads, and their out= kernels only resize an output whose shape
// is wrong. ATen registers a CompositeExplicitAutogradNonFunctional kernel
// for exactly those (it computes the meta, allocates, and calls out=).
bool IsStructured(const c10::OperatorHandle& functional) {
  return functional.hasKernelForDispatchKey(
      c10::DispatchKey::CompositeExplicitAutogradNonFunctional);
}

void FindFunctionalVariant(const c10::FunctionSchema& schema, OpInfo& info) {
  std::vector<size_t> inputs;
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    const c10::Argument& argument = schema.arguments()[i];
    const bool out = argument.kwarg_only() && argument.alias_info() != nullptr &&
                     argument.alias_info()->isWrite();
    (out ? info.out_positions : inputs).push_back(i);
  }
  if (info.out_positions.empty() || info.out_positions.size() != schema.returns().size()) {
    info.out_positions.clear();
    return;
  }
  for (const c10::OperatorHandle& handle : OtherOverloads(schema)) {
    const c10::FunctionSchema& candidate = handle.schema();
    if (candidate.arguments().size() != inputs.size() ||
        candidate.returns().size() != info.out_positions.size()) {
      continue;
    }
    bool matches = true;
    for (size_t i = 0; i < inputs.size() && matches; ++i) {
      const c10::Argument& ours = schema.arguments()[inputs[i]];
      const c10::Argument& theirs = candidate.arguments()[i];
      matches = ours.name() == theirs.name() && *ours.type() == *theirs.type() &&
                theirs.alias_info() == nullptr;
    }
    for (const c10::Argument& result : candidate.returns()) {
      matches &= result.alias_info() == nullptr &&
                 result.type()->kind() == c10::TypeKind::TensorType;
    }
    if (matches) {
      // A structured out= kernel writes the given outputs as its functional
      // overload would: it runs as it is. Losses with a `reduction` reduce
      // into their output through a resize even when structured.
      const bool reduces = schema.argumentIndexWithName("reduction").has_value();
      if (!IsStructured(handle) || reduces) info.functional_variant = handle;
      if (!info.functional_variant) info.out_positions.clear();
      return;
    }
  }
  info.out_positions.clear();
}

std::unique_ptr<OpInfo> Describe(const c10::OperatorHandle& op) {
  const c10::FunctionSchema& schema = op.schema();
  auto info = std::make_unique<OpInfo>();
  info->qualified = schema.overload_name().empty()
                        ? schema.name()
                        : absl::StrFormat("%s.%s", schema.name(), schema.overload_name());
  bool has_tensor_input = false;
  bool has_generator = false;
  bool writes_in_place = false;
  bool writes_out_argument = false;
  for (const c10::Argument& argument : schema.arguments()) {
    const ArgKind kind = KindOf(argument.real_type());
    info->kinds.push_back(kind);
    const bool written = argument.alias_info() != nullptr && argument.alias_info()->isWrite();
    info->is_index.push_back(kind == ArgKind::kTensor && !written &&
                             (argument.name() == "index" || argument.name() == "indices"));
    info->is_written.push_back(written);
    if (kind == ArgKind::kUnsupported && info->unsupported.empty()) {
      info->unsupported = absl::StrFormat("argument %s of type %s", argument.name(),
                                          argument.real_type()->str());
    }
    if (written) (argument.kwarg_only() ? writes_out_argument : writes_in_place) = true;
    if ((kind == ArgKind::kTensor || kind == ArgKind::kTensorList ||
         kind == ArgKind::kOptionalTensorList) &&
        !written) {
      has_tensor_input = true;
    }
    if (kind == ArgKind::kTensorList || kind == ArgKind::kOptionalTensorList ||
        kind == ArgKind::kScalarList) {
      info->has_list_arguments = true;
    }
    has_generator |= kind == ArgKind::kGenerator;
  }
  for (const c10::Argument& result : schema.returns()) {
    const bool tensor = result.type()->kind() == c10::TypeKind::TensorType;
    if (!tensor && !IsTensorListType(result.type()) && info->unsupported.empty()) {
      info->unsupported = absl::StrFormat("it returns %s", result.type()->str());
    }
    int aliased = -1;
    if (const c10::AliasInfo* alias = result.alias_info()) {
      if (!alias->isWrite()) info->is_view = true;
      for (size_t i = 0; i < schema.arguments().size(); ++i) {
        const c10::AliasInfo* argument_alias = schema.arguments()[i].alias_info();
        if (argument_alias != nullptr && SameAliasSet(*argument_alias, *alias)) {
          aliased = static_cast<int>(i);
        }
      }
    }
    info->return_argument.push_back(aliased);
    info->returns_new |= aliased < 0;
  }
  // An in-place operator keeps its tensor's shape whatever its numbers
  // (fill_, uniform_): they stay per-call immediates.
  info->scalars_in_signature = !has_tensor_input && !(writes_in_place && !writes_out_argument);
  const std::string& name = schema.name();
  info->out_keeps_shape_of_right_count =
      writes_out_argument && (name == "aten::linspace" || name == "aten::logspace" ||
                              name == "aten::arange" || name == "aten::range");
  info->seeds_default_generator =
      !has_generator && op.hasTag(at::Tag::nondeterministic_seeded);
  // The CPU kernels of the in-place samplers check their numbers (bounds,
  // ranges) before drawing; their meta kernels do not.
  info->checks_numbers_on_cpu =
      writes_in_place && has_generator &&
      (name == "aten::random_" || name == "aten::uniform_" || name == "aten::normal_" ||
       name == "aten::cauchy_" || name == "aten::log_normal_" || name == "aten::exponential_" ||
       name == "aten::geometric_");
  bool all_new_tensors = !info->is_view && !schema.returns().empty();
  for (size_t i = 0; i < schema.returns().size(); ++i) {
    all_new_tensors &= info->return_argument[i] < 0 &&
                       schema.returns()[i].type()->kind() == c10::TypeKind::TensorType;
  }
  // Only where the out= overload is known to compute exactly what the
  // functional one does into the given tensor: structured and pointwise
  // operators. Others' out= kernels may resize their outputs
  // (mse_loss.out) or expect other result dtypes (native_batch_norm.out);
  // they run functionally and the daemon copies the results into place.
  const bool reduces = schema.argumentIndexWithName("reduction").has_value();
  // Functional foreach operators (_foreach_sqrt) return a list their
  // .out overload writes.
  const bool foreach_list = schema.name().rfind("aten::_foreach_", 0) == 0 &&
                            schema.returns().size() == 1 &&
                            IsTensorListType(schema.returns()[0].type()) &&
                            info->return_argument[0] < 0;
  const bool out_is_equivalent = (op.hasTag(at::Tag::pointwise) && !reduces) || IsStructured(op);
  if (((all_new_tensors && out_is_equivalent) || foreach_list) &&
      schema.returns().size() == 1 && info->unsupported.empty()) {
    FindOutVariant(schema, *info);
  }
  if (!info->returns_new && !info->is_view && info->unsupported.empty()) {
    FindFunctionalVariant(schema, *info);
  }
  return info;
}

absl::Mutex infos_mutex(absl::kConstInit);

}  // namespace

bool IsTensorListType(const c10::TypePtr& type) {
  return type->kind() == c10::TypeKind::ListType &&
         type->castRaw<c10::ListType>()->getElementType()->kind() == c10::TypeKind::TensorType;
}

const OpInfo& InfoFor(const c10::OperatorHandle& op) {
  static auto* infos = new absl::flat_hash_map<const void*, std::unique_ptr<OpInfo>>();
  const void* key = &op.schema();
  {
    absl::ReaderMutexLock lock(&infos_mutex);
    if (auto it = infos->find(key); it != infos->end()) return *it->second;
  }
  std::unique_ptr<OpInfo> described = Describe(op);
  absl::MutexLock lock(&infos_mutex);
  auto [it, inserted] = infos->try_emplace(key, std::move(described));
  return *it->second;
}

}  // namespace torch_neuronx::internal

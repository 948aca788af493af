// One pass over a call's arguments (CallWalker) and what the generic path
// does to a call's arguments before it: the device the call runs on, CPU
// scalars moved to it, the device's dtype of each host dtype.
#ifndef TORCH_NEURONX_CSRC_ATEN_INTERNAL_CALL_WALKER_H_
#define TORCH_NEURONX_CSRC_ATEN_INTERNAL_CALL_WALKER_H_

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "csrc/aten/internal/OpInfo.h"
#include "csrc/runtime/NeuronFunctions.h"
#include "csrc/runtime/NeuronGenerator.h"
#include "neuron/rtd/eager_op.h"

namespace torch_neuronx::internal {

namespace rtd = neuron::rtd;
using torch::jit::Stack;

template <typename T>
void AppendRaw(std::string& key, const T& value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof(value));
}


inline void AppendInts(std::string& key, c10::IntArrayRef values) {
  AppendRaw(key, static_cast<uint32_t>(values.size()));
  key.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t));
}

inline rtd::ImmediateScalar::Kind ScalarKind(const c10::IValue& value) {
  if (value.isBool()) return rtd::ImmediateScalar::Kind::kBool;
  if (value.isInt()) return rtd::ImmediateScalar::Kind::kInt64;
  if (value.isComplexDouble()) return rtd::ImmediateScalar::Kind::kComplexDouble;
  return rtd::ImmediateScalar::Kind::kDouble;
}

// One pass over a call's arguments: the signature key, the LAUNCH addresses
// and scalars, and (when `plan_arguments` is set, on a cache miss) the
// executable's argument descriptions. The same walk serves both, so the
// addresses and scalar offsets always match what the executable expects.
class CallWalker {
 public:
  // `call_seeds` (optional) keeps the seeds the walk draws from generators,
  // in argument order, so that walking the same call again (after out=
  // arguments were resized) sends the same seeds instead of drawing again.
  CallWalker(const OpInfo& info, c10::DeviceIndex device, std::vector<rtd::OpValue>* plan,
             std::vector<uint64_t>* call_seeds = nullptr)
      : info_(info), device_(device), plan_(plan), call_seeds_(call_seeds) {
    key.reserve(kKeyReserve);
  }

  void Walk(Stack& arguments) {
    for (size_t i = 0; i < arguments.size(); ++i) {
      writing_ = info_.is_written[i];
      Argument(info_.kinds[i], arguments[i]);
    }
    writing_ = false;
  }

  rtd::TensorLayout Tensor(const at::Tensor& tensor) {
    TORCH_CHECK(tensor.device().type() == c10::DeviceType::PrivateUse1 &&
                    tensor.device().index() == device_,
                info_.qualified, ": expected every tensor on neuron:", static_cast<int>(device_),
                ", got one on ", tensor.device().str());
    const uint32_t index = static_cast<uint32_t>(addresses.size());
    addresses.push_back(reinterpret_cast<uint64_t>(writing_ ? tensor.mutable_data_ptr()
                                                            : tensor.const_data_ptr()));
    AppendRaw(key, static_cast<int8_t>(tensor.scalar_type()));
    AppendInts(key, tensor.sizes());
    AppendInts(key, tensor.strides());
    if (plan_ == nullptr) return {};
    return rtd::TensorLayout{.dtype = static_cast<int32_t>(tensor.scalar_type()),
                             .sizes = tensor.sizes().vec(),
                             .strides = tensor.strides().vec(),
                             .address_index = index};
  }

  std::string key;
  absl::InlinedVector<uint64_t, 16> addresses;
  absl::InlinedVector<uint8_t, 64> scalars;

 private:
  // Enough for an operator of a few tensors, so that building the key
  // allocates once.
  static constexpr size_t kKeyReserve = 192;

  void Add(rtd::OpValue value) {
    if (plan_ != nullptr) plan_->push_back(std::move(value));
  }

  uint32_t PushScalar(const c10::IValue& value) {
    const auto offset = static_cast<uint32_t>(scalars.size());
    uint8_t bytes[16] = {};
    if (value.isBool()) {
      bytes[0] = value.toBool() ? 1 : 0;
    } else if (value.isInt()) {
      const int64_t number = value.toInt();
      std::memcpy(bytes, &number, 8);
    } else if (value.isComplexDouble()) {
      const c10::complex<double> number = value.toComplexDouble();
      const double parts[2] = {number.real(), number.imag()};
      std::memcpy(bytes, parts, 16);
    } else {
      const double number = value.toDouble();
      std::memcpy(bytes, &number, 8);
    }
    scalars.insert(scalars.end(), bytes, bytes + rtd::ImmediateScalarBytes(ScalarKind(value)));
    return offset;
  }

  void Immediate(const c10::IValue& value) {
    const rtd::ImmediateScalar::Kind kind = ScalarKind(value);
    AppendRaw(key, static_cast<uint8_t>(kind));
    if (info_.scalars_in_signature) {
      const size_t before = scalars.size();
      PushScalar(value);
      key.append(reinterpret_cast<const char*>(scalars.data() + before), scalars.size() - before);
      scalars.resize(before);
    }
    const uint32_t offset = PushScalar(value);
    Add(rtd::ImmediateScalar{.kind = kind, .offset = offset});
  }

  uint64_t CallSeed(const at::Generator& generator) {
    const size_t index = seeds_walked_++;
    if (call_seeds_ != nullptr && index < call_seeds_->size()) return (*call_seeds_)[index];
    const uint64_t seed = generator.get<NeuronGenerator>()->NextCallSeed();
    if (call_seeds_ != nullptr) call_seeds_->push_back(seed);
    return seed;
  }

  void Argument(ArgKind kind, const c10::IValue& value) {
    if (kind == ArgKind::kGenerator) {
      // No generator given: the device's default one, so that
      // torch.manual_seed makes the call reproducible.
      at::Generator generator =
          value.isNone() ? DefaultGenerator(device_) : value.toGenerator();
      key.push_back('G');
      // The planning walk only needs the offset: drawing a seed there would
      // advance the generator twice on a plan-cache miss.
      const uint64_t seed = plan_ != nullptr ? 0 : CallSeed(generator);
      const auto offset = static_cast<uint32_t>(scalars.size());
      PushScalar(c10::IValue(static_cast<int64_t>(seed)));
      Add(rtd::GeneratorSeed{.offset = offset});
      return;
    }
    if (value.isNone()) {
      key.push_back('N');
      Add(rtd::NoneValue{});
      return;
    }
    key.push_back(static_cast<char>('a' + static_cast<int>(kind)));
    switch (kind) {
      case ArgKind::kTensor: {
        const at::Tensor& tensor = value.toTensor();
        if (!tensor.defined()) {
          Add(rtd::NoneValue{});
          return;
        }
        rtd::TensorLayout layout = Tensor(tensor);
        Add(std::move(layout));
        return;
      }
      case ArgKind::kTensorList: {
        std::vector<rtd::TensorLayout> layouts;
        const c10::List<at::Tensor> list = value.toTensorList();
        for (size_t i = 0; i < list.size(); ++i) layouts.push_back(Tensor(list.get(i)));
        Add(std::move(layouts));
        return;
      }
      case ArgKind::kOptionalTensorList: {
        rtd::OptionalTensorLayouts layouts;
        for (const c10::IValue& item : value.toListRef()) {
          if (item.isNone() || !item.toTensor().defined()) {
            key.push_back('N');
            layouts.emplace_back(std::nullopt);
          } else {
            layouts.emplace_back(Tensor(item.toTensor()));
          }
        }
        Add(std::move(layouts));
        return;
      }
      case ArgKind::kInt:
      case ArgKind::kIntLike: {
        const int64_t number = value.toInt();
        AppendRaw(key, number);
        Add(number);
        return;
      }
      case ArgKind::kIntList: {
        const std::vector<int64_t> numbers = value.toIntVector();
        AppendInts(key, numbers);
        Add(numbers);
        return;
      }
      case ArgKind::kBool: {
        const bool flag = value.toBool();
        key.push_back(flag ? '1' : '0');
        Add(flag);
        return;
      }
      case ArgKind::kBoolList: {
        std::vector<bool> flags;
        for (const c10::IValue& item : value.toListRef()) {
          flags.push_back(item.toBool());
          key.push_back(flags.back() ? '1' : '0');
        }
        Add(std::move(flags));
        return;
      }
      case ArgKind::kFloatList: {
        std::vector<double> numbers = value.toDoubleVector();
        for (double number : numbers) AppendRaw(key, number);
        Add(std::move(numbers));
        return;
      }
      case ArgKind::kFloat:
      case ArgKind::kScalar:
        Immediate(value);
        return;
      case ArgKind::kScalarList: {
        const auto& items = value.toListRef();
        const rtd::ImmediateScalar::Kind list_kind =
            items.empty() ? rtd::ImmediateScalar::Kind::kDouble : ScalarKind(items[0]);
        AppendRaw(key, static_cast<uint8_t>(list_kind));
        AppendRaw(key, static_cast<uint32_t>(items.size()));
        const auto offset = static_cast<uint32_t>(scalars.size());
        for (const c10::IValue& item : items) {
          TORCH_CHECK(ScalarKind(item) == list_kind, info_.qualified,
                      ": a scalar list mixes ints, floats and bools");
          PushScalar(item);
        }
        Add(rtd::ImmediateScalarList{
            .kind = list_kind, .offset = offset, .count = static_cast<uint32_t>(items.size())});
        return;
      }
      case ArgKind::kScalarType: {
        const at::ScalarType type = value.toScalarType();
        AppendRaw(key, static_cast<int8_t>(type));
        Add(rtd::ScalarTypeValue{.dtype = static_cast<int32_t>(type)});
        return;
      }
      case ArgKind::kDevice:
        Add(rtd::DeviceValue{});
        return;
      case ArgKind::kString: {
        const std::string text = value.toStringRef();
        AppendRaw(key, static_cast<uint32_t>(text.size()));
        key.append(text);
        Add(text);
        return;
      }
      case ArgKind::kGenerator:
        return;  // handled above
      case ArgKind::kUnsupported:
        TORCH_CHECK(false, info_.qualified, ": internal error: unsupported argument reached ",
                    "the device path");
    }
  }

  const OpInfo& info_;
  const c10::DeviceIndex device_;
  std::vector<rtd::OpValue>* const plan_;
  std::vector<uint64_t>* const call_seeds_;
  size_t seeds_walked_ = 0;
  // Whether the argument being walked is one the operator writes.
  bool writing_ = false;
};

// The device a call runs on: that of its first neuron tensor, else its
// `device=` argument.
std::optional<c10::DeviceIndex> CallDevice(const OpInfo& info, const Stack& arguments);

// CPU tensors of zero dimensions (a Python number wrapped by ATen, a
// torch.tensor(1.0)) are accepted next to device tensors, as CUDA does, and
// so are index arguments on the CPU (`x.index_fill(0, cpu_index, v)`, as the
// CPU takes them and as indexing takes CPU indices): they are copied to the
// device.
void MoveCpuScalarsAndIndices(const OpInfo& info, c10::DeviceIndex device, Stack& arguments);

}  // namespace torch_neuronx::internal

#endif  // TORCH_NEURONX_CSRC_ATEN_INTERNAL_CALL_WALKER_H_

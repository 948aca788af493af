#include "csrc/runtime/NeuronGenerator.h"

#include <ATen/core/Tensor.h>
#include <ATen/EmptyTensor.h>
#include <c10/core/TensorImpl.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

#include "csrc/runtime/NeuronFunctions.h"

namespace torch_neuronx {
namespace {

// SplitMix64: a well-mixed 64-bit seed from (seed, offset).
uint64_t Mix(uint64_t value) {
  value += 0x9e3779b97f4a7c15ull;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

}  // namespace

NeuronGenerator::NeuronGenerator(c10::DeviceIndex device, uint64_t seed)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(seed) {}

void NeuronGenerator::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

uint64_t NeuronGenerator::seed() {
  const uint64_t random = (uint64_t{std::random_device()()} << 32) | std::random_device()();
  set_current_seed(random);
  return random;
}

void NeuronGenerator::set_state(const c10::TensorImpl& state) {
  // A state on the device would be read through a device address: refuse it
  // as every generator does (TypeError).
  at::detail::check_rng_state(state);
  TORCH_CHECK_VALUE(state.numel() == 16 && state.is_contiguous(),
                    "a neuron generator state is a contiguous uint8 tensor of 16 bytes, got ",
                    state.numel(), " elements");
  const auto* bytes = static_cast<const uint8_t*>(state.data());
  std::memcpy(&seed_, bytes, 8);
  std::memcpy(&offset_, bytes + 8, 8);
}

c10::intrusive_ptr<c10::TensorImpl> NeuronGenerator::get_state() const {
  // The caller holds mutex_: nothing here may dispatch, or a dispatch mode
  // that calls back into this generator would wait for itself.
  at::Tensor state = at::detail::empty_cpu({16}, at::kByte, std::nullopt, std::nullopt,
                                           std::nullopt, std::nullopt);
  auto* bytes = state.data_ptr<uint8_t>();
  std::memcpy(bytes, &seed_, 8);
  std::memcpy(bytes + 8, &offset_, 8);
  return state.getIntrusivePtr();
}

uint64_t NeuronGenerator::NextCallSeed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return Mix(seed_ ^ Mix(offset_++));
}

NeuronGenerator* NeuronGenerator::clone_impl() const {
  auto* copy = new NeuronGenerator(device().index(), seed_);
  copy->offset_ = offset_;
  return copy;
}

namespace {

std::mutex generators_mutex;
std::vector<at::Generator>* generators = nullptr;  // guarded by generators_mutex
std::optional<uint64_t> pending_seed;              // guarded by generators_mutex

}  // namespace

const at::Generator& DefaultGenerator(c10::DeviceIndex device) {
  std::lock_guard<std::mutex> lock(generators_mutex);
  if (generators == nullptr) {
    const c10::DeviceIndex count = std::max<c10::DeviceIndex>(DeviceCountNoThrow(), 1);
    auto* created = new std::vector<at::Generator>();
    for (c10::DeviceIndex index = 0; index < count; ++index) {
      created->push_back(at::make_generator<NeuronGenerator>(
          index, pending_seed.value_or(c10::default_rng_seed_val)));
    }
    generators = created;
  }
  if (device < 0) device = CurrentDevice();
  TORCH_CHECK_VALUE(static_cast<size_t>(device) < generators->size(), "neuron:",
                    static_cast<int>(device), " has no generator: the process sees ",
                    generators->size(), " neuron device(s)");
  return (*generators)[device];
}

void ManualSeedAll(uint64_t seed) {
  std::lock_guard<std::mutex> lock(generators_mutex);
  if (generators == nullptr) {
    pending_seed = seed;
    return;
  }
  for (at::Generator& generator : *generators) {
    std::lock_guard<std::mutex> generator_lock(generator.mutex());
    generator.set_current_seed(seed);
  }
}

}  // namespace torch_neuronx

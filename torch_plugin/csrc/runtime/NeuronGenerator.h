// The random generator of a neuron device. Random operators run in the
// daemon; each call gets a seed derived from (seed, offset) here, and the
// offset advances, so a run seeded with torch.manual_seed repeats exactly.
#ifndef TORCH_NEURONX_CSRC_RUNTIME_NEURON_GENERATOR_H_
#define TORCH_NEURONX_CSRC_RUNTIME_NEURON_GENERATOR_H_

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace torch_neuronx {

// Thread-safety: as every GeneratorImpl, callers hold mutex_ (NextCallSeed
// takes it itself).
class NeuronGenerator final : public c10::GeneratorImpl {
 public:
  explicit NeuronGenerator(c10::DeviceIndex device, uint64_t seed = c10::default_rng_seed_val);

  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override { return seed_; }
  uint64_t seed() override;
  void set_offset(uint64_t offset) override { offset_ = offset; }
  uint64_t get_offset() const override { return offset_; }
  // 16 bytes: seed, then offset (little-endian uint64s).
  void set_state(const c10::TensorImpl& state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  // The seed of the next random call; advances the offset.
  uint64_t NextCallSeed();

  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  NeuronGenerator* clone_impl() const override;

  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The device's default generator (torch.manual_seed seeds it).
const at::Generator& DefaultGenerator(c10::DeviceIndex device);

// Seeds every device's default generator. Before the device is first used
// the seed is kept for the generators' creation, so that torch.manual_seed
// in a program that never touches the device does not reach the daemon.
void ManualSeedAll(uint64_t seed);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_RUNTIME_NEURON_GENERATOR_H_

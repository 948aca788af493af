// The tensor sets of NEFF launches, kept per launch signature (the NEFF and
// the addresses of its tensors): a training loop launches a NEFF on the same
// buffers step after step, and building its sets (a slice of a segment per
// tensor, two sets) costs libnrt calls each time. Only launches whose
// tensors all lie in segments of the launching core are kept (a staged
// tensor is per launch).
#ifndef NEURON_RTD_DAEMON_HAL_NRT_LAUNCH_TENSOR_SETS_H_
#define NEURON_RTD_DAEMON_HAL_NRT_LAUNCH_TENSOR_SETS_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "daemon/hal/nrt/nrt_runtime.h"

namespace neuron::rtd::hal::nrt {

// Thread-safety: none; a core's instance is used under that core's lock
// (NrtDevice's), as are the libnrt calls it makes.
class LaunchTensorSets {
 public:
  struct Sets {
    nrt_tensor_set_t* inputs = nullptr;
    nrt_tensor_set_t* outputs = nullptr;
  };

  // Keeps at most `capacity` signatures, dropping the least recently used.
  LaunchTensorSets(std::shared_ptr<NrtRuntime> runtime, size_t capacity)
      : runtime_(std::move(runtime)), capacity_(capacity) {}
  LaunchTensorSets(const LaunchTensorSets&) = delete;
  LaunchTensorSets& operator=(const LaunchTensorSets&) = delete;
  ~LaunchTensorSets() { Clear(); }

  // The sets kept for launching NEFF `neff` on `bindings`, or null.
  const Sets* Find(uint64_t neff, std::span<const uint64_t> bindings);
  // Keeps `sets`, which bind `slices` (owned from now on) of `segments`.
  void Insert(uint64_t neff, std::span<const uint64_t> bindings, Sets sets,
              std::vector<nrt_tensor_t*> slices, std::vector<const nrt_tensor_t*> segments);
  // Drops every signature with a slice of `segment`, before it is freed.
  void ForgetSegment(const nrt_tensor_t* segment);
  void Clear();

  size_t size() const { return entries_.size(); }

 private:
  struct Key {
    uint64_t neff;
    std::vector<uint64_t> bindings;
    bool operator==(const Key&) const = default;
    template <typename H>
    friend H AbslHashValue(H state, const Key& key) {
      return H::combine(std::move(state), key.neff, key.bindings);
    }
  };
  struct Entry {
    Key key;
    Sets sets;
    std::vector<nrt_tensor_t*> slices;
    std::vector<const nrt_tensor_t*> segments;
  };
  using Lru = std::list<Entry>;

  void Destroy(Entry& entry);

  const std::shared_ptr<NrtRuntime> runtime_;
  const size_t capacity_;
  // Most recently used first.
  Lru lru_;
  absl::flat_hash_map<Key, Lru::iterator> entries_;
};

}  // namespace neuron::rtd::hal::nrt

#endif  // NEURON_RTD_DAEMON_HAL_NRT_LAUNCH_TENSOR_SETS_H_

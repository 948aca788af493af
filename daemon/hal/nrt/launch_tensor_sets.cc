#include "daemon/hal/nrt/launch_tensor_sets.h"

#include <algorithm>

namespace neuron::rtd::hal::nrt {

const LaunchTensorSets::Sets* LaunchTensorSets::Find(uint64_t neff,
                                                     std::span<const uint64_t> bindings) {
  auto it = entries_.find(Key{neff, {bindings.begin(), bindings.end()}});
  if (it == entries_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return &it->second->sets;
}

void LaunchTensorSets::Insert(uint64_t neff, std::span<const uint64_t> bindings, Sets sets,
                              std::vector<nrt_tensor_t*> slices,
                              std::vector<const nrt_tensor_t*> segments) {
  Key key{neff, {bindings.begin(), bindings.end()}};
  if (auto it = entries_.find(key); it != entries_.end()) {
    Destroy(*it->second);
    lru_.erase(it->second);
    entries_.erase(it);
  }
  lru_.push_front(Entry{.key = key,
                        .sets = sets,
                        .slices = std::move(slices),
                        .segments = std::move(segments)});
  entries_.emplace(std::move(key), lru_.begin());
  while (entries_.size() > capacity_) {
    Destroy(lru_.back());
    entries_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

void LaunchTensorSets::ForgetSegment(const nrt_tensor_t* segment) {
  for (auto it = lru_.begin(); it != lru_.end();) {
    if (std::find(it->segments.begin(), it->segments.end(), segment) == it->segments.end()) {
      ++it;
      continue;
    }
    Destroy(*it);
    entries_.erase(it->key);
    it = lru_.erase(it);
  }
}

void LaunchTensorSets::Clear() {
  for (Entry& entry : lru_) Destroy(entry);
  lru_.clear();
  entries_.clear();
}

void LaunchTensorSets::Destroy(Entry& entry) {
  const NrtApi& api = runtime_->api();
  api.destroy_tensor_set(&entry.sets.inputs);
  api.destroy_tensor_set(&entry.sets.outputs);
  for (nrt_tensor_t*& slice : entry.slices) api.tensor_free(&slice);
}

}  // namespace neuron::rtd::hal::nrt

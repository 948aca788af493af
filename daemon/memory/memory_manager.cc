#include "daemon/memory/memory_manager.h"

#include "absl/strings/str_format.h"

namespace neuron::rtd::memory {

MemoryManager::MemoryManager(const hal::Backend& backend) {
  for (hal::Device* device : backend.devices()) {
    allocators_.push_back(std::make_unique<DeviceAllocator>(*device));
  }
}

absl::StatusOr<SegmentRef> MemoryManager::Allocate(uint32_t device_index, uint32_t core,
                                                   uint64_t size) {
  if (device_index >= allocators_.size()) {
    return absl::NotFoundError(absl::StrFormat("no device %d", device_index));
  }
  DeviceAllocator& allocator = *allocators_[device_index];
  absl::StatusOr<hal::DeviceRange> range = allocator.Allocate(size, core);
  if (!range.ok()) return range.status();
  return std::make_shared<const Segment>(next_segment_id_.fetch_add(1), *range, allocator);
}

AllocatorStats MemoryManager::stats(uint32_t device_index) const {
  if (device_index >= allocators_.size()) return {};
  return allocators_[device_index]->stats();
}

}  // namespace neuron::rtd::memory

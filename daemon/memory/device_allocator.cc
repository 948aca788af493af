#include "daemon/memory/device_allocator.h"

#include "absl/strings/str_format.h"

namespace neuron::rtd::memory {

DeviceAllocator::DeviceAllocator(hal::Device& device) : device_(device), hbm_(device.hbm()) {
  absl::MutexLock lock(&mutex_);
  InsertFree(hbm_.address, hbm_.size);
}

void DeviceAllocator::InsertFree(uint64_t address, uint64_t size) {
  free_by_address_.emplace(address, size);
  free_by_size_.emplace(size, address);
}

void DeviceAllocator::EraseFree(std::map<uint64_t, uint64_t>::iterator it) {
  free_by_size_.erase({it->second, it->first});
  free_by_address_.erase(it);
}

absl::StatusOr<hal::DeviceRange> DeviceAllocator::Allocate(uint64_t size, uint32_t core) {
  if (size == 0) return absl::InvalidArgumentError("cannot allocate a segment of 0 bytes");
  if (size > hbm_.size) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot allocate %d bytes on device %d: it has %d bytes of HBM in all", size,
        device_index(), hbm_.size));
  }
  const uint64_t rounded = (size + hal::kHbmPageBytes - 1) / hal::kHbmPageBytes * hal::kHbmPageBytes;
  hal::DeviceRange range;
  {
    absl::MutexLock lock(&mutex_);
    auto best = free_by_size_.lower_bound({rounded, 0});
    if (best == free_by_size_.end()) {
      const uint64_t largest = free_by_size_.empty() ? 0 : free_by_size_.rbegin()->first;
      return absl::ResourceExhaustedError(absl::StrFormat(
          "out of device memory on device %d: requested %d bytes, %d bytes free (largest free "
          "block %d bytes)",
          device_index(), size, hbm_.size - used_bytes_, largest));
    }
    range = {best->second, rounded};
    auto by_address = free_by_address_.find(best->second);
    const uint64_t block_size = by_address->second;
    EraseFree(by_address);
    if (block_size > rounded) InsertFree(range.address + rounded, block_size - rounded);
    allocated_.emplace(range.address, rounded);
    used_bytes_ += rounded;
  }
  if (absl::Status acquired = device_.Acquire(range, core); !acquired.ok()) {
    absl::MutexLock lock(&mutex_);
    allocated_.erase(range.address);
    ReturnToFreeList(range);
    return acquired;
  }
  return range;
}

absl::Status DeviceAllocator::Free(hal::DeviceRange range) {
  {
    absl::MutexLock lock(&mutex_);
    auto it = allocated_.find(range.address);
    if (it == allocated_.end() || it->second != range.size) {
      return absl::InternalError(absl::StrFormat(
          "device %d: freeing [0x%x, +%d), which is not an allocated segment", device_index(),
          range.address, range.size));
    }
    allocated_.erase(it);
  }
  // Released before it is free again: once another thread can allocate the
  // range, nothing may decommit it.
  absl::Status released = device_.Release(range);
  absl::MutexLock lock(&mutex_);
  ReturnToFreeList(range);
  return released;
}

void DeviceAllocator::ReturnToFreeList(hal::DeviceRange range) {
  used_bytes_ -= range.size;
  uint64_t address = range.address;
  uint64_t size = range.size;
  auto next = free_by_address_.lower_bound(address);
  if (next != free_by_address_.end() && next->first == address + size) {
    size += next->second;
    EraseFree(next);
  }
  auto after = free_by_address_.lower_bound(address);
  if (after != free_by_address_.begin()) {
    auto previous = std::prev(after);
    if (previous->first + previous->second == address) {
      address = previous->first;
      size += previous->second;
      EraseFree(previous);
    }
  }
  InsertFree(address, size);
}

AllocatorStats DeviceAllocator::stats() const {
  absl::MutexLock lock(&mutex_);
  return AllocatorStats{
      .total_bytes = hbm_.size,
      .used_bytes = used_bytes_,
      .largest_free_bytes = free_by_size_.empty() ? 0 : free_by_size_.rbegin()->first,
      .segments = allocated_.size(),
  };
}

}  // namespace neuron::rtd::memory

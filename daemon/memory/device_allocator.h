// Hands out HBM of one device as segments: page-aligned ranges of device
// virtual addresses, best fit, neighbours merged on free.
#ifndef NEURON_RTD_DAEMON_MEMORY_DEVICE_ALLOCATOR_H_
#define NEURON_RTD_DAEMON_MEMORY_DEVICE_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/hal/device.h"

namespace neuron::rtd::memory {

struct AllocatorStats {
  uint64_t total_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t largest_free_bytes = 0;
  uint64_t segments = 0;
};

// Thread-safety: every method may be called from any thread.
// Lifetime: the device outlives the allocator.
class DeviceAllocator {
 public:
  explicit DeviceAllocator(hal::Device& device);

  // A range of at least `size` bytes (rounded up to hal::kHbmPageBytes),
  // acquired from the device in the HBM of its logical core `core`.
  // RESOURCE_EXHAUSTED, with the requested and free numbers, when no free
  // range is large enough (or the device has no memory left near `core`);
  // INVALID_ARGUMENT for 0.
  absl::StatusOr<hal::DeviceRange> Allocate(uint64_t size, uint32_t core);

  // Returns a range that Allocate handed out. Releasing a range twice, or one
  // that was never handed out, is a daemon bug: it is reported, not applied.
  absl::Status Free(hal::DeviceRange range);

  AllocatorStats stats() const;
  uint32_t device_index() const { return device_.info().index; }

 private:
  void InsertFree(uint64_t address, uint64_t size) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void EraseFree(std::map<uint64_t, uint64_t>::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Puts a range that is no longer allocated back, merged with neighbours.
  void ReturnToFreeList(hal::DeviceRange range) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  hal::Device& device_;
  const hal::DeviceRange hbm_;
  mutable absl::Mutex mutex_;
  // Free ranges by address (for merging) and by (size, address) (best fit).
  std::map<uint64_t, uint64_t> free_by_address_ ABSL_GUARDED_BY(mutex_);
  std::set<std::pair<uint64_t, uint64_t>> free_by_size_ ABSL_GUARDED_BY(mutex_);
  std::map<uint64_t, uint64_t> allocated_ ABSL_GUARDED_BY(mutex_);
  uint64_t used_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace neuron::rtd::memory

#endif  // NEURON_RTD_DAEMON_MEMORY_DEVICE_ALLOCATOR_H_

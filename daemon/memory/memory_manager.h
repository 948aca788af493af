// The device memory of the host: one allocator per device, segments with
// host-wide ids.
#ifndef NEURON_RTD_DAEMON_MEMORY_MEMORY_MANAGER_H_
#define NEURON_RTD_DAEMON_MEMORY_MEMORY_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/hal/device.h"
#include "daemon/memory/device_allocator.h"
#include "daemon/memory/segment.h"

namespace neuron::rtd::memory {

// Thread-safety: every method may be called from any thread.
// Lifetime: outlives every segment it hands out; the backend outlives it.
class MemoryManager {
 public:
  explicit MemoryManager(const hal::Backend& backend);

  // A segment of at least `size` bytes on device `device_index`, in the HBM
  // of its logical core `core` (an index among the device's cores).
  absl::StatusOr<SegmentRef> Allocate(uint32_t device_index, uint32_t core, uint64_t size);

  AllocatorStats stats(uint32_t device_index) const;

 private:
  std::vector<std::unique_ptr<DeviceAllocator>> allocators_;
  std::atomic<uint64_t> next_segment_id_{1};
};

}  // namespace neuron::rtd::memory

#endif  // NEURON_RTD_DAEMON_MEMORY_MEMORY_MANAGER_H_

// The simulated HBM of one chip: a range of host address space reserved at
// start (no memory committed, so a 16-chip, 1.5 TiB host starts on a 24 GiB
// machine) whose pages are committed as the allocator hands them out.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_HBM_ARENA_H_
#define NEURON_RTD_DAEMON_HAL_SIM_HBM_ARENA_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/hal/device.h"

namespace neuron::rtd::hal::sim {

// Thread-safety: Acquire and Release of disjoint ranges may run concurrently;
// callers (the allocator) never pass overlapping ranges at once.
// Lifetime: the reservation is unmapped when the arena is destroyed; the
// OsSysCalls must outlive it.
class HbmArena {
 public:
  // Reserves `size` bytes of host address space that back device addresses
  // [device_base, device_base + size). RESOURCE_EXHAUSTED when the host
  // cannot reserve it.
  static absl::StatusOr<std::unique_ptr<HbmArena>> Reserve(uint64_t device_base, uint64_t size,
                                                           OsSysCalls& sys_calls);

  HbmArena(const HbmArena&) = delete;
  HbmArena& operator=(const HbmArena&) = delete;
  ~HbmArena();

  DeviceRange range() const { return {device_base_, size_}; }

  // Commits (makes readable and writable) or returns to the host the pages
  // of a kHbmPageBytes-aligned range inside range().
  absl::Status Commit(DeviceRange range);
  absl::Status Decommit(DeviceRange range);

  // The host memory that backs [address, address + size), for the sim's
  // kernels and DMA. Only bounds are checked: the caller makes sure the range
  // lies in committed memory.
  absl::StatusOr<void*> HostPointer(uint64_t address, uint64_t size) const;

 private:
  HbmArena(uint64_t device_base, uint64_t size, void* host_base, OsSysCalls& sys_calls)
      : device_base_(device_base), size_(size), host_base_(host_base), sys_calls_(sys_calls) {}

  absl::Status CheckPageRange(DeviceRange range, std::string_view operation) const;
  void* HostAddress(uint64_t address) const;

  const uint64_t device_base_;
  const uint64_t size_;
  void* const host_base_;
  OsSysCalls& sys_calls_;
};

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_HBM_ARENA_H_

#include "daemon/hal/sim/hbm_arena.h"

#include <sys/mman.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace neuron::rtd::hal::sim {

absl::StatusOr<std::unique_ptr<HbmArena>> HbmArena::Reserve(uint64_t device_base, uint64_t size,
                                                            OsSysCalls& sys_calls) {
  if (size == 0 || size % kHbmPageBytes != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("HBM size ", size, " must be a positive multiple of ", kHbmPageBytes));
  }
  // PROT_NONE + MAP_NORESERVE: address space only; no memory is committed
  // or charged until Commit.
  SysCallPtr mapping = sys_calls.Mmap(nullptr, size, PROT_NONE,
                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (!mapping.ok()) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot reserve %d bytes of host address space for simulated HBM: %s", size,
        std::strerror(mapping.error)));
  }
  return std::unique_ptr<HbmArena>(new HbmArena(device_base, size, mapping.value, sys_calls));
}

HbmArena::~HbmArena() { sys_calls_.Munmap(host_base_, size_); }

absl::Status HbmArena::CheckPageRange(DeviceRange range, std::string_view operation) const {
  if (range.address < device_base_ || range.size > size_ ||
      range.address - device_base_ > size_ - range.size) {
    return absl::OutOfRangeError(absl::StrFormat(
        "%s of HBM range [0x%x, +%d) outside the device's [0x%x, +%d)", operation, range.address,
        range.size, device_base_, size_));
  }
  if ((range.address - device_base_) % kHbmPageBytes != 0 || range.size % kHbmPageBytes != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s of HBM range [0x%x, +%d) not aligned to %d bytes", operation, range.address,
        range.size, kHbmPageBytes));
  }
  return absl::OkStatus();
}

void* HbmArena::HostAddress(uint64_t address) const {
  return static_cast<char*>(host_base_) + (address - device_base_);
}

absl::Status HbmArena::Commit(DeviceRange range) {
  if (absl::Status status = CheckPageRange(range, "commit"); !status.ok()) return status;
  if (range.size == 0) return absl::OkStatus();
  SysCallInt result = sys_calls_.Mprotect(HostAddress(range.address), range.size,
                                          PROT_READ | PROT_WRITE);
  if (!result.ok()) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot commit %d bytes of simulated HBM at 0x%x: %s", range.size, range.address,
        std::strerror(result.error)));
  }
  return absl::OkStatus();
}

absl::Status HbmArena::Decommit(DeviceRange range) {
  if (absl::Status status = CheckPageRange(range, "decommit"); !status.ok()) return status;
  if (range.size == 0) return absl::OkStatus();
  void* host = HostAddress(range.address);
  // MADV_DONTNEED drops the pages (reads after a later Commit see zeros);
  // PROT_NONE turns a stray access into a fault instead of silent reuse.
  SysCallInt dropped = sys_calls_.Madvise(host, range.size, MADV_DONTNEED);
  if (!dropped.ok()) {
    return absl::ErrnoToStatus(dropped.error, absl::StrFormat("madvise HBM at 0x%x", range.address));
  }
  SysCallInt protected_result = sys_calls_.Mprotect(host, range.size, PROT_NONE);
  if (!protected_result.ok()) {
    return absl::ErrnoToStatus(protected_result.error,
                               absl::StrFormat("mprotect HBM at 0x%x", range.address));
  }
  return absl::OkStatus();
}

absl::StatusOr<void*> HbmArena::HostPointer(uint64_t address, uint64_t size) const {
  if (address < device_base_ || size > size_ || address - device_base_ > size_ - size) {
    return absl::OutOfRangeError(absl::StrFormat(
        "HBM range [0x%x, +%d) outside the device's [0x%x, +%d)", address, size, device_base_,
        size_));
  }
  return HostAddress(address);
}

}  // namespace neuron::rtd::hal::sim

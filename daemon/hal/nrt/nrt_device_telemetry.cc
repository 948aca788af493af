// NrtDevice's telemetry: the HBM below the daemon (the driver's per-core
// accounting, else libnrt's count) and the driver's ECC counts.
#include "daemon/hal/nrt/nrt_device.h"

#include <algorithm>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "daemon/hal/nrt/sysfs_ecc.h"
#include "daemon/hal/nrt/sysfs_memory.h"

namespace neuron::rtd::hal::nrt {

uint64_t NrtDevice::SegmentBytes() const {
  uint64_t bytes = 0;
  absl::ReaderMutexLock lock(&segments_mutex_);
  for (const auto& [address, segment] : segments_) bytes += segment.size;
  return bytes;
}

std::optional<uint64_t> NrtDevice::LibnrtBytesInUse() const {
  const NrtApi& api = runtime_->api();
  if (api.get_vnc_memory_stats == nullptr) return std::nullopt;
  uint64_t in_use = 0;
  bool known = true;
  for (size_t core = 0; core < vncs_.size(); ++core) {
    // libnrt's calls on a core are serialised; a stats call must not wait
    // out an execution that may take seconds, nor meet a restart.
    if (core_locks_[core].TryLock()) {
      runtime_->CallUnlessRestarting([&] {
        nrt_vnc_memory_stats_t stats{};
        size_t written = 0;
        if (api.get_vnc_memory_stats(static_cast<uint32_t>(vncs_[core]), &stats, sizeof(stats),
                                     &written) == NRT_SUCCESS &&
            written >= sizeof(stats.bytes_used)) {
          runtime_bytes_used_[core].store(static_cast<int64_t>(stats.bytes_used),
                                          std::memory_order_relaxed);
        }
      });
      core_locks_[core].Unlock();
    }
    const int64_t used = runtime_bytes_used_[core].load(std::memory_order_relaxed);
    known &= used >= 0;
    in_use += static_cast<uint64_t>(std::max<int64_t>(used, 0));
  }
  if (!known) return std::nullopt;
  return in_use;
}

std::optional<SysfsMemoryUsage> NrtDevice::DriverMemoryUsage(std::vector<CoreHbm>& cores) const {
  const size_t lnc = physical_cores_.size() / std::max<size_t>(1, vncs_.size());
  SysfsMemoryUsage device;
  std::vector<CoreHbm> by_core;
  for (size_t core = 0; core < vncs_.size(); ++core) {
    const std::optional<SysfsMemoryUsage> usage = ReadSysfsMemoryUsage(
        sysfs_dir_, std::span<const uint32_t>(physical_cores_).subspan(core * lnc, lnc));
    if (!usage) return std::nullopt;
    by_core.push_back({.tensors_bytes = usage->tensors,
                       .model_code_bytes = usage->model_code,
                       .constants_bytes = usage->constants,
                       .scratchpad_bytes = usage->scratchpad,
                       .runtime_bytes = usage->other});
    device.tensors += usage->tensors;
    device.model_code += usage->model_code;
    device.constants += usage->constants;
    device.scratchpad += usage->scratchpad;
    device.other += usage->other;
  }
  cores = std::move(by_core);
  return device;
}

DeviceTelemetry NrtDevice::Telemetry() const {
  DeviceTelemetry telemetry{.ecc = ReadSysfsEcc(sysfs_dir_)};
  const auto less_segments = [this](uint64_t bytes) {
    const uint64_t segments = SegmentBytes();
    return bytes > segments ? bytes - segments : 0;
  };
  if (std::optional<SysfsMemoryUsage> usage = DriverMemoryUsage(telemetry.core_hbm)) {
    telemetry.programs = ProgramHbm{.model_code_bytes = usage->model_code,
                                    .constants_bytes = usage->constants,
                                    .scratchpad_bytes = usage->scratchpad};
    // The runtime's tensors besides the daemon's segments are its own
    // (staging tensors of launches that bind across cores).
    telemetry.runtime_hbm_bytes = usage->other + less_segments(usage->tensors);
    return telemetry;
  }
  if (std::optional<uint64_t> in_use = LibnrtBytesInUse()) {
    telemetry.runtime_hbm_bytes = less_segments(*in_use);
  }
  return telemetry;
}

}  // namespace neuron::rtd::hal::nrt

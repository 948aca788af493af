// One simulated Trainium chip: HBM in a reserved host arena, engines that
// run on the host CPU (memcpy for DMA, ATen CPU kernels for compute).
#ifndef NEURON_RTD_DAEMON_HAL_SIM_SIM_DEVICE_H_
#define NEURON_RTD_DAEMON_HAL_SIM_SIM_DEVICE_H_

#include <memory>

#include "daemon/hal/device.h"
#include "daemon/hal/sim/engine_attribution.h"
#include "daemon/hal/sim/hbm_arena.h"
#include "daemon/hal/sim/sim_executable.h"

namespace neuron::rtd::hal::sim {

class SimDevice final : public Device {
 public:
  SimDevice(DeviceInfo info, std::unique_ptr<HbmArena> arena, LaunchSettings launch_settings)
      : info_(std::move(info)), arena_(std::move(arena)), launch_settings_(launch_settings) {}

  const DeviceInfo& info() const override { return info_; }
  uint8_t* FabricView(uint64_t address, uint64_t bytes) override {
    absl::StatusOr<void*> view = arena_->HostPointer(address, bytes);
    return view.ok() ? static_cast<uint8_t*>(*view) : nullptr;
  }
  DeviceRange hbm() const override { return arena_->range(); }
  absl::Status Acquire(DeviceRange range, uint32_t /*core: one arena per chip*/) override {
    return arena_->Commit(range);
  }
  absl::Status Release(DeviceRange range) override { return arena_->Decommit(range); }

  absl::Status CopyHostToDevice(uint64_t device_address, const void* host,
                                uint64_t bytes) override;
  absl::Status CopyDeviceToHost(void* host, uint64_t device_address, uint64_t bytes) override;
  absl::Status CopyDeviceToDevice(uint64_t device_address, Device& source,
                                  uint64_t source_address, uint64_t bytes) override;
  absl::Status Fill(uint64_t device_address, uint64_t bytes, uint64_t pattern,
                    uint32_t pattern_bytes) override;
  absl::Status Reduce(const Reduction& reduction, uint64_t destination,
                      std::span<const ReduceOperand> sources) override;
  absl::Status RunAddF32(std::span<const uint64_t> arguments,
                          std::span<const uint8_t> scalars) override;
  absl::Status Dispatch(const Executable& executable, uint32_t core,
                        std::span<const uint64_t> bindings,
                        std::span<const uint8_t> immediates) override;
  Engine EngineOf(CommandKind kind, std::string_view op_name,
                  const Executable* /*launched*/) const override {
    return SimEngineOf(kind, op_name);
  }
  // Nothing but the daemon's segments lives in simulated HBM, and host
  // memory standing in for it never reports an ECC event.
  DeviceTelemetry Telemetry() const override {
    return {.runtime_hbm_bytes = 0,
            .ecc = {.mem_corrected = 0, .mem_uncorrected = 0, .mem_repairable_uncorrected = 0,
                    .sram_corrected = 0, .sram_uncorrected = 0}};
  }

  // The host memory behind device memory, for the sim's kernels and DMA.
  HbmArena& arena() { return *arena_; }

 private:
  const DeviceInfo info_;
  const std::unique_ptr<HbmArena> arena_;
  const LaunchSettings launch_settings_;
};

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_SIM_DEVICE_H_

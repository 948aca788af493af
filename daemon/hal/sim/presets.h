// Topologies the simulated backend can present: real Trainium instance types,
// and a small one for developer machines.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_PRESETS_H_
#define NEURON_RTD_DAEMON_HAL_SIM_PRESETS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/hal/device_info.h"

namespace neuron::rtd::hal::sim {

struct SimPreset {
  std::string_view name;
  std::string_view instance_type;
  Architecture architecture;
  uint32_t chips;
  uint32_t physical_cores_per_chip;
  uint64_t hbm_bytes_per_chip;
  uint32_t default_logical_nc_config;
  // Chips form a torus_rows x torus_columns 2D torus over NeuronLink; 0 when
  // there is a single chip.
  uint32_t torus_rows;
  uint32_t torus_columns;
};

// The preset a daemon uses when the configuration names none.
inline constexpr std::string_view kDefaultSimPreset = "dev";

std::span<const SimPreset> SimPresets();

// nullptr when no preset has that name.
const SimPreset* FindSimPreset(std::string_view name);

// "dev, trn2.3xlarge, ...", for error messages.
std::string SimPresetNames();

// The devices of `preset` with `logical_nc_config` physical cores per logical
// core (0: the preset's default). INVALID_ARGUMENT when the LNC does not
// divide the chip's physical cores.
absl::StatusOr<std::vector<DeviceInfo>> BuildTopology(const SimPreset& preset,
                                                      uint32_t logical_nc_config);

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_PRESETS_H_

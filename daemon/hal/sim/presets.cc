#include "daemon/hal/sim/presets.h"

#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace neuron::rtd::hal::sim {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

// Trainium2: 8 NeuronCore-v3 and 96 GiB HBM a chip, LNC=2 by default.
// Trainium3: 8 NeuronCore-v4 and 144 GiB HBM a chip.
constexpr std::array kPresets = {
    SimPreset{.name = "dev",
              .instance_type = "sim-dev",
              .architecture = Architecture::kTrainium2,
              .chips = 1,
              .physical_cores_per_chip = 4,
              .hbm_bytes_per_chip = 4 * kGiB,
              .default_logical_nc_config = 2,
              .torus_rows = 0,
              .torus_columns = 0},
    SimPreset{.name = "trn2.3xlarge",
              .instance_type = "trn2.3xlarge",
              .architecture = Architecture::kTrainium2,
              .chips = 1,
              .physical_cores_per_chip = 8,
              .hbm_bytes_per_chip = 96 * kGiB,
              .default_logical_nc_config = 2,
              .torus_rows = 0,
              .torus_columns = 0},
    SimPreset{.name = "trn2.48xlarge",
              .instance_type = "trn2.48xlarge",
              .architecture = Architecture::kTrainium2,
              .chips = 16,
              .physical_cores_per_chip = 8,
              .hbm_bytes_per_chip = 96 * kGiB,
              .default_logical_nc_config = 2,
              .torus_rows = 4,
              .torus_columns = 4},
    SimPreset{.name = "trn3",
              .instance_type = "trn3",
              .architecture = Architecture::kTrainium3,
              .chips = 1,
              .physical_cores_per_chip = 8,
              .hbm_bytes_per_chip = 144 * kGiB,
              .default_logical_nc_config = 2,
              .torus_rows = 0,
              .torus_columns = 0},
};

std::vector<uint32_t> TorusNeighbours(const SimPreset& preset, uint32_t chip) {
  if (preset.torus_rows == 0 || preset.torus_columns == 0) return {};
  const uint32_t rows = preset.torus_rows;
  const uint32_t columns = preset.torus_columns;
  const uint32_t row = chip / columns;
  const uint32_t column = chip % columns;
  std::vector<uint32_t> neighbours = {
      ((row + rows - 1) % rows) * columns + column,
      ((row + 1) % rows) * columns + column,
      row * columns + (column + columns - 1) % columns,
      row * columns + (column + 1) % columns,
  };
  std::sort(neighbours.begin(), neighbours.end());
  neighbours.erase(std::unique(neighbours.begin(), neighbours.end()), neighbours.end());
  std::erase(neighbours, chip);
  return neighbours;
}

}  // namespace

std::span<const SimPreset> SimPresets() { return kPresets; }

const SimPreset* FindSimPreset(std::string_view name) {
  for (const SimPreset& preset : kPresets) {
    if (preset.name == name) return &preset;
  }
  return nullptr;
}

std::string SimPresetNames() {
  return absl::StrJoin(kPresets, ", ", [](std::string* out, const SimPreset& preset) {
    out->append(preset.name);
  });
}

absl::StatusOr<std::vector<DeviceInfo>> BuildTopology(const SimPreset& preset,
                                                      uint32_t logical_nc_config) {
  const uint32_t lnc =
      logical_nc_config == 0 ? preset.default_logical_nc_config : logical_nc_config;
  if (lnc != 1 && lnc != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("logical NeuronCore config must be 1 or 2, got ", lnc));
  }
  if (preset.physical_cores_per_chip % lnc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("logical NeuronCore config ", lnc, " does not divide the ",
                     preset.physical_cores_per_chip, " physical cores of preset ", std::string(preset.name)));
  }
  std::vector<DeviceInfo> devices;
  devices.reserve(preset.chips);
  uint32_t next_core = 0;
  for (uint32_t chip = 0; chip < preset.chips; ++chip) {
    DeviceInfo info;
    info.index = chip;
    info.instance_type = std::string(preset.instance_type);
    info.architecture = preset.architecture;
    info.backend = BackendKind::kSim;
    info.physical_cores = preset.physical_cores_per_chip;
    info.logical_nc_config = lnc;
    info.first_core_index = next_core;
    info.hbm_total_bytes = preset.hbm_bytes_per_chip;
    info.connected_devices = TorusNeighbours(preset, chip);
    info.bus_id = absl::StrCat("sim:", chip);
    info.topology_source = "sim";
    // The simulated core has one command queue per level, as many as
    // PyTorch keeps stream pools for on CUDA.
    info.stream_priority_levels = 4;
    next_core += info.logical_cores();
    devices.push_back(std::move(info));
  }
  return devices;
}

}  // namespace neuron::rtd::hal::sim

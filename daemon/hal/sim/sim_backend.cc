#include "daemon/hal/sim/sim_backend.h"

#include "absl/strings/str_cat.h"
#include "daemon/hal/sim/aten_executable.h"
#include "daemon/hal/sim/graph_executable.h"
#include "daemon/hal/sim/nki/nki_executable.h"

namespace neuron::rtd::hal::sim {

SimBackend::SimBackend(std::vector<std::unique_ptr<SimDevice>> devices,
                       GraphCompiler* graph_compiler)
    : devices_(std::move(devices)), graph_compiler_(graph_compiler) {
  device_views_.reserve(devices_.size());
  for (const auto& device : devices_) device_views_.push_back(device.get());
}

absl::StatusOr<std::unique_ptr<Executable>> SimBackend::PrepareExecutable(
    const ExecutableSpec& spec) {
  if (const auto* neff = std::get_if<NeffPlan>(&spec)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "NEFF '", neff->name, "' needs real Trainium: NEFFs run on neuron-rtd's nrt backend "
        "([device] backend = \"nrt\"); this daemon runs the simulated device (sim)"));
  }
  absl::StatusOr<std::unique_ptr<SimExecutable>> prepared = PrepareHostExecutable(spec, graph_compiler_);
  if (!prepared.ok()) return prepared.status();
  return std::unique_ptr<Executable>(*std::move(prepared));
}

absl::StatusOr<std::unique_ptr<SimExecutable>> PrepareHostExecutable(
    const ExecutableSpec& spec, GraphCompiler* graph_compiler) {
  if (const auto* op = std::get_if<EagerOpPlan>(&spec)) return PrepareAtenExecutable(*op);
  if (const auto* graph = std::get_if<GraphPlan>(&spec)) {
    return PrepareGraphExecutable(*graph, graph_compiler);
  }
  if (const auto* kernel = std::get_if<NkiKernelPlan>(&spec)) return PrepareNkiExecutable(*kernel);
  return absl::InvalidArgumentError("a NEFF does not run on the host");
}

absl::StatusOr<std::unique_ptr<SimBackend>> CreateSimBackend(const SimOptions& options,
                                                             OsSysCalls& sys_calls) {
  const SimPreset* preset = FindSimPreset(options.preset);
  if (preset == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown simulator preset \"", options.preset,
                                                   "\"; known presets: ", SimPresetNames()));
  }
  absl::StatusOr<std::vector<DeviceInfo>> topology =
      BuildTopology(*preset, options.logical_nc_config);
  if (!topology.ok()) return topology.status();

  std::vector<std::unique_ptr<SimDevice>> devices;
  devices.reserve(topology->size());
  for (DeviceInfo& info : *topology) {
    const uint64_t base = kDeviceAddressBase + uint64_t{info.index} * kDeviceAddressStride;
    absl::StatusOr<std::unique_ptr<HbmArena>> arena =
        HbmArena::Reserve(base, info.hbm_total_bytes, sys_calls);
    if (!arena.ok()) {
      return absl::Status(arena.status().code(), absl::StrCat("device ", info.index, ": ",
                                                              arena.status().message()));
    }
    devices.push_back(std::make_unique<SimDevice>(std::move(info), *std::move(arena),
                                                  options.launch));
  }
  return std::make_unique<SimBackend>(std::move(devices), options.graph_compiler);
}

}  // namespace neuron::rtd::hal::sim

#include "daemon/hal/nrt/nrt_backend.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "neuron/version.h"

namespace neuron::rtd::hal::nrt {
namespace {

// trn2: 8 physical NeuronCore-v3 per chip and 96 GiB of HBM, 24 GiB per
// logical core at the default LNC of 2.
constexpr uint32_t kTrn2PhysicalCoresPerChip = 8;
constexpr uint64_t kTrn2HbmPerPhysicalCore = 12ull << 30;

// "3", "3-6", "3-5,6": the cores named; empty when malformed.
std::vector<uint32_t> ParseCores(const std::string& text) {
  std::vector<uint32_t> cores;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::vector<absl::string_view> bounds = absl::StrSplit(part, '-');
    uint32_t first = 0, last = 0;
    if (bounds.size() > 2 || !absl::SimpleAtoi(bounds[0], &first) ||
        !absl::SimpleAtoi(bounds.back(), &last) || first > last) {
      return {};
    }
    for (uint32_t core = first; core <= last; ++core) cores.push_back(core);
  }
  return cores;
}

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// The tensors at launch addresses of an eager op, a graph or an NKI kernel.
std::vector<TensorLayout> BoundTensors(const ExecutableSpec& spec) {
  std::vector<TensorLayout> bound;
  if (const auto* op = std::get_if<EagerOpPlan>(&spec)) {
    for (const OpValue& argument : op->arguments) {
      if (const auto* tensor = std::get_if<TensorLayout>(&argument)) {
        bound.push_back(*tensor);
      } else if (const auto* tensors = std::get_if<std::vector<TensorLayout>>(&argument)) {
        bound.insert(bound.end(), tensors->begin(), tensors->end());
      } else if (const auto* optional = std::get_if<OptionalTensorLayouts>(&argument)) {
        for (const std::optional<TensorLayout>& each : *optional) {
          if (each) bound.push_back(*each);
        }
      }
    }
    bound.insert(bound.end(), op->outputs.begin(), op->outputs.end());
  } else if (const auto* graph = std::get_if<GraphPlan>(&spec)) {
    bound = graph->inputs;
    for (const GraphOutput& output : graph->outputs) bound.push_back(output.destination);
  } else if (const auto* kernel = std::get_if<NkiKernelPlan>(&spec)) {
    for (const NkiAllocation& allocation : kernel->allocations) {
      if (allocation.space != NkiSpace::kHbm) continue;
      bound.push_back(TensorLayout{.dtype = allocation.dtype,
                                   .sizes = {allocation.elements},
                                   .strides = {1},
                                   .address_index = allocation.address_index});
    }
  }
  return bound;
}

}  // namespace

NrtBackend::NrtBackend(std::shared_ptr<NrtRuntime> runtime,
                       std::shared_ptr<ModelCache> models,
                       std::vector<std::unique_ptr<NrtDevice>> devices,
                       HostKernels host_kernels, GraphCompiler* graph_compiler)
    : runtime_(std::move(runtime)),
      models_(std::move(models)),
      devices_(std::move(devices)),
      host_kernels_(std::move(host_kernels)),
      graph_compiler_(graph_compiler) {
  for (const auto& device : devices_) device_views_.push_back(device.get());
}

bool NrtBackend::ResetEndsEverySession(uint32_t device) const {
  return device < devices_.size() && devices_[device]->HasFailedCore();
}

absl::StatusOr<std::unique_ptr<Executable>> NrtBackend::PrepareNeff(const NeffPlan& plan) {
  NrtDevice& device = *devices_.front();
  if (plan.lnc_size != 0 && plan.lnc_size != device.info().logical_nc_config) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "NEFF '%s' was compiled for logical cores of %d physical cores (--lnc %d); this host's "
        "cores are of %d (NEURON_LOGICAL_NC_CONFIG)",
        plan.name, plan.lnc_size, plan.lnc_size, device.info().logical_nc_config));
  }
  const uint64_t key = next_neff_key_.fetch_add(1);
  absl::StatusOr<std::vector<NeffTensor>> tensors = device.InspectNeff(key, plan.bytes);
  if (!tensors.ok()) {
    models_->Forget(key);
    return tensors.status();
  }
  if (tensors->size() > kMaxLaunchArguments) {
    models_->Forget(key);
    return absl::InvalidArgumentError(absl::StrFormat(
        "NEFF '%s' has %d tensors; a launch passes at most %d", plan.name, tensors->size(),
        kMaxLaunchArguments));
  }
  return std::unique_ptr<Executable>(
      std::make_unique<LoadedNeff>(plan, *std::move(tensors), models_, key));
}

absl::StatusOr<std::unique_ptr<Executable>> NrtBackend::PrepareExecutable(
    const ExecutableSpec& spec) {
  if (const auto* neff = std::get_if<NeffPlan>(&spec)) return PrepareNeff(*neff);
  if (absl::Status available = host_kernels_.Available("an eager op, a graph or an NKI kernel");
      !available.ok()) {
    return available;
  }
  absl::StatusOr<std::unique_ptr<sim::SimExecutable>> host =
      host_kernels_.api->prepare_host_executable(spec, graph_compiler_);
  if (!host.ok()) return host.status();
  return std::unique_ptr<Executable>(
      std::make_unique<HostExecutable>(*std::move(host), BoundTensors(spec)));
}

absl::StatusOr<std::unique_ptr<NrtBackend>> CreateNrtBackend(const NrtOptions& options,
                                                             OsSysCalls& sys_calls) {
  absl::StatusOr<std::unique_ptr<NrtLibrary>> library =
      NrtLibrary::Open(options.library_candidates);
  if (!library.ok()) return library.status();
  const NrtApi& api = (*library)->api();
  // libnrt reads its core set from the environment at nrt_init.
  if (!options.visible_cores.empty()) {
    ::setenv("NEURON_RT_VISIBLE_CORES", options.visible_cores.c_str(), 1);
  }
  if (options.logical_nc_config != 0) {
    ::setenv("NEURON_LOGICAL_NC_CONFIG", absl::StrCat(options.logical_nc_config).c_str(), 1);
  }
  const std::string visible_env = Env("NEURON_RT_VISIBLE_CORES");
  uint32_t total = 0;
  if (NRT_STATUS status = api.get_total_nc_count(&total); status != NRT_SUCCESS || total == 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "no NeuronCores on this host: %s (from %s) reports %d cores%s. On a trn2 instance, "
        "check that the Neuron driver is loaded (lsmod | grep neuron) and /dev/neuron0 exists",
        "libnrt", (*library)->path(), total,
        status != NRT_SUCCESS ? absl::StrCat(" (", NrtStatusName(status), ")") : ""));
  }
  const std::string version = NEURON_RTD_VERSION;
  if (NRT_STATUS status = api.init(NRT_FRAMEWORK_TYPE_NO_FW, version.c_str(), "");
      status != NRT_SUCCESS) {
    const std::string wanted =
        visible_env.empty() ? std::string("every core of the host")
                            : absl::StrCat("cores ", visible_env, " (NEURON_RT_VISIBLE_CORES)");
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s. neuron-rtd asked for %s; a NeuronCore belongs to one process at a time, so "
        "another process may hold them: `neuron-ls --wide` lists each core's process. Stop "
        "it, or give this daemon other cores ([device] nrt_visible_cores)",
        (*library)->ToStatus(status, "nrt_init").message(), wanted));
  }
  auto runtime = std::make_shared<NrtRuntime>(*std::move(library), version);
  auto models = std::make_shared<ModelCache>(runtime);
  uint32_t visible = 0;
  if (absl::Status counted = runtime->library().ToStatus(api.get_visible_nc_count(&visible),
                                                         "nrt_get_visible_nc_count");
      !counted.ok()) {
    return counted;
  }
  if (visible == 0) return absl::FailedPreconditionError("libnrt gave this process no cores");

  Architecture architecture = Architecture::kTrainium2;
  std::string instance_type = "trn2";
  if (api.get_instance_info != nullptr) {
    nrt_instance_info_t instance{};
    if (api.get_instance_info(&instance, sizeof(instance)) == NRT_SUCCESS) {
      if (instance.family == NRT_INSTANCE_FAMILY_TRN3) {
        architecture = Architecture::kTrainium3;
        instance_type = "trn3";
      }
    }
  }
  uint32_t physical_per_chip = kTrn2PhysicalCoresPerChip;
  std::string topology_source = "libnrt";
  absl::StatusOr<std::map<uint32_t, SysfsDevice>> sysfs = ReadSysfsTopology(options.sysfs_root);
  if (sysfs.ok()) {
    const SysfsDevice& first = sysfs->begin()->second;
    if (first.device_name == "Trainium2" || first.device_name == "Trainium3") {
      architecture =
          first.device_name == "Trainium3" ? Architecture::kTrainium3 : Architecture::kTrainium2;
      instance_type = first.device_name == "Trainium3" ? "trn3" : "trn2";
    } else if (!first.device_name.empty()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "this host's Neuron devices are %s (%s/neuron%d/info/architecture/device_name); "
          "neuron-rtd drives Trainium2 and Trainium3",
          first.device_name, options.sysfs_root, first.index));
    }
    if (!first.instance_type.empty()) instance_type = absl::AsciiStrToLower(first.instance_type);
    physical_per_chip = first.physical_cores;
    topology_source = "sysfs";
  }
  uint32_t lnc = options.logical_nc_config;
  if (lnc == 0 && !absl::SimpleAtoi(Env("NEURON_LOGICAL_NC_CONFIG"), &lnc)) lnc = 2;
  if (lnc != 1 && lnc != 2) lnc = 2;
  const uint32_t logical_per_chip = std::max<uint32_t>(1, physical_per_chip / lnc);
  // Absolute core numbers of the process-relative ones, by chip.
  std::vector<uint32_t> absolute = ParseCores(visible_env);
  if (absolute.size() != visible) {
    absolute.clear();
    for (uint32_t core = 0; core < visible; ++core) absolute.push_back(core);
  }
  std::map<uint32_t, std::vector<int32_t>> vncs_by_chip;
  // The physical cores within the chip that those logical cores are.
  std::map<uint32_t, std::vector<uint32_t>> physical_by_chip;
  for (uint32_t relative = 0; relative < visible; ++relative) {
    const uint32_t chip = absolute[relative] / logical_per_chip;
    vncs_by_chip[chip].push_back(static_cast<int32_t>(relative));
    const uint32_t first_physical = absolute[relative] % logical_per_chip * lnc;
    for (uint32_t physical = first_physical; physical < first_physical + lnc; ++physical) {
      physical_by_chip[chip].push_back(physical);
    }
  }
  // Our device index of each chip this daemon owns cores of.
  std::map<uint32_t, uint32_t> index_of_chip;
  for (const auto& [chip, vncs] : vncs_by_chip) {
    index_of_chip.emplace(chip, static_cast<uint32_t>(index_of_chip.size()));
  }
  std::vector<std::unique_ptr<NrtDevice>> devices;
  uint32_t first_core = 0;
  for (const auto& [chip, vncs] : vncs_by_chip) {
    const uint32_t index = static_cast<uint32_t>(devices.size());
    uint64_t hbm_bytes = 0;
    for (int32_t vnc : vncs) {
      nrt_vnc_memory_stats_t stats{};
      size_t written = 0;
      if (api.get_vnc_memory_stats != nullptr &&
          api.get_vnc_memory_stats(static_cast<uint32_t>(vnc), &stats, sizeof(stats), &written) ==
              NRT_SUCCESS &&
          stats.bytes_limit > 0) {
        hbm_bytes += stats.bytes_limit / kHbmPageBytes * kHbmPageBytes;
      } else {
        hbm_bytes += kTrn2HbmPerPhysicalCore * lnc;
      }
    }
    DeviceInfo info;
    info.index = index;
    info.instance_type = instance_type;
    info.architecture = architecture;
    info.backend = BackendKind::kHardware;
    info.physical_cores = static_cast<uint32_t>(vncs.size()) * lnc;
    info.logical_nc_config = lnc;
    info.first_core_index = first_core;
    info.hbm_total_bytes = hbm_bytes;
    info.bus_id = absl::StrFormat("neuron%d", chip);
    info.topology_source = topology_source;
    if (sysfs.ok()) {
      if (auto it = sysfs->find(chip); it != sysfs->end()) {
        for (uint32_t peer : it->second.connected_devices) {
          if (auto owned = index_of_chip.find(peer); owned != index_of_chip.end()) {
            info.connected_devices.push_back(owned->second);
          }
        }
      }
    }
    // Stream priorities are the daemon's own order of a core's commands
    // (daemon/queue), the same on every backend.
    info.stream_priority_levels = 4;
    first_core += static_cast<uint32_t>(vncs.size());
    const DeviceRange hbm{.address = kDeviceAddressBase + uint64_t{index} * kDeviceAddressStride,
                          .size = hbm_bytes};
    absl::StatusOr<std::unique_ptr<sim::HbmArena>> mirror =
        sim::HbmArena::Reserve(hbm.address, hbm.size, sys_calls);
    if (!mirror.ok()) return mirror.status();
    devices.push_back(std::make_unique<NrtDevice>(
        std::move(info), hbm, runtime, vncs, *std::move(mirror), options.host_kernels, models,
        absl::StrFormat("%s/neuron%d", options.sysfs_root, chip), physical_by_chip[chip]));
  }
  return std::make_unique<NrtBackend>(std::move(runtime), std::move(models), std::move(devices),
                                      options.host_kernels, options.graph_compiler);
}

}  // namespace neuron::rtd::hal::nrt

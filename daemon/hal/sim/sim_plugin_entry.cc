// libneuron_rtd_sim.so's one exported symbol (sim_plugin_api.h).
#include <c10/core/CPUAllocator.h>
#include <dlfcn.h>
#include <torch/headeronly/version.h>

#include <filesystem>

#include "daemon/hal/sim/aten_kernels.h"
#include "daemon/hal/sim/sim_backend.h"
#include "daemon/hal/sim/sim_plugin_api.h"
#include "neuron/version.h"

namespace neuron::rtd::hal::sim {
namespace {

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(const SimOptions& options,
                                                       OsSysCalls& sys_calls) {
  absl::StatusOr<std::unique_ptr<SimBackend>> backend = CreateSimBackend(options, sys_calls);
  if (!backend.ok()) return backend.status();
  return std::unique_ptr<Backend>(*std::move(backend));
}

std::string TorchLibraryDir() {
  Dl_info library{};
  if (::dladdr(reinterpret_cast<void*>(&c10::GetCPUAllocator), &library) == 0 ||
      library.dli_fname == nullptr) {
    return "";
  }
  std::error_code error;
  const std::filesystem::path path = std::filesystem::weakly_canonical(library.dli_fname, error);
  return error ? "" : path.parent_path().string();
}

constexpr SimPluginApi kApi{
    .abi_version = kSimPluginAbiVersion,
    .build_id = NEURON_RTD_VERSION,
    .torch_version = TORCH_VERSION,
    .torch_library_dir = TorchLibraryDir,
    .create_backend = CreateBackend,
    .prepare_host_executable = PrepareHostExecutable,
    .reduce_in_arenas = ReduceInArenas,
    .run_add_f32 = RunAddF32,
};

}  // namespace
}  // namespace neuron::rtd::hal::sim

extern "C" __attribute__((visibility("default"))) const neuron::rtd::hal::sim::SimPluginApi*
neuron_rtd_sim_plugin_v1() {
  return &neuron::rtd::hal::sim::kApi;
}

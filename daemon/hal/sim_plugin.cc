#include "daemon/hal/sim_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "absl/strings/str_format.h"
#include "neuron/version.h"

namespace neuron::rtd::hal {

std::string InstalledBesideDaemon(std::string_view name) {
  std::error_code error;
  const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return (std::filesystem::path("/usr/lib/neuron-rtd") / name).string();
  return (program.parent_path().parent_path() / "lib" / "neuron-rtd" / name).string();
}

std::string DefaultSimPluginPath() { return InstalledBesideDaemon(sim::kSimPluginFileName); }

absl::StatusOr<const sim::SimPluginApi*> LoadSimPlugin(const std::string& path) {
  ::dlerror();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot load the simulated backend's plugin %s: %s (set [device] sim_plugin, or "
        "--sim-plugin, to where libneuron_rtd_sim.so is installed)",
        path, why != nullptr ? why : "unknown error"));
  }
  using EntryPoint = const sim::SimPluginApi* (*)();
  auto entry = reinterpret_cast<EntryPoint>(::dlsym(handle, sim::kSimPluginEntryPoint));
  const sim::SimPluginApi* api = entry != nullptr ? entry() : nullptr;
  if (api == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s is not neuron-rtd's simulated backend plugin (no %s)", path,
        sim::kSimPluginEntryPoint));
  }
  if (api->abi_version != sim::kSimPluginAbiVersion ||
      api->build_id == nullptr || std::strcmp(api->build_id, NEURON_RTD_VERSION) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s is from another build of neuron-rtd (plugin %s, ABI %d; this daemon %s, ABI %d): "
        "install the plugin of the same version",
        path, api->build_id != nullptr ? api->build_id : "?", api->abi_version,
        NEURON_RTD_VERSION, sim::kSimPluginAbiVersion));
  }
  return api;
}

}  // namespace neuron::rtd::hal

#include "daemon/hal/backend_factory.h"

#include "absl/strings/str_format.h"
#include "daemon/hal/nrt/nrt_backend.h"
#include "daemon/hal/sim_plugin.h"
#include "spdlog/spdlog.h"

namespace neuron::rtd::hal {

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(const BackendOptions& options,
                                                       OsSysCalls& sys_calls) {
  const absl::StatusOr<const sim::SimPluginApi*> plugin = LoadSimPlugin(
      options.sim_plugin.empty() ? DefaultSimPluginPath() : options.sim_plugin);
  if (options.kind == "sim") {
    if (!plugin.ok()) return plugin.status();
    return (*plugin)->create_backend(
        sim::SimOptions{.preset = options.sim_preset,
                        .logical_nc_config = options.logical_nc_config,
                        .launch = {.max_host_bytes = options.sim_max_launch_host_bytes,
                                   .parallel_min_ns =
                                       int64_t{options.sim_parallel_launch_min_us} * 1000},
                        .graph_compiler = options.graph_compiler},
        sys_calls);
  }
  if (options.kind == "nrt") {
    nrt::NrtOptions nrt_options{
        .visible_cores = options.nrt_visible_cores,
        .logical_nc_config = options.logical_nc_config,
        .host_kernels = {.launch = {.max_host_bytes = options.sim_max_launch_host_bytes,
                                    .parallel_min_ns =
                                        int64_t{options.sim_parallel_launch_min_us} * 1000}},
        .graph_compiler = options.graph_compiler};
    if (plugin.ok()) {
      nrt_options.host_kernels.api = *plugin;
    } else {
      nrt_options.host_kernels.missing = std::string(plugin.status().message());
      spdlog::warn("the nrt backend runs NEFFs only: {}", nrt_options.host_kernels.missing);
    }
    if (!options.nrt_library.empty()) nrt_options.library_candidates = {options.nrt_library};
    if (!options.nrt_sysfs_root.empty()) nrt_options.sysfs_root = options.nrt_sysfs_root;
    absl::StatusOr<std::unique_ptr<nrt::NrtBackend>> backend =
        nrt::CreateNrtBackend(nrt_options, sys_calls);
    if (!backend.ok()) return backend.status();
    return std::unique_ptr<Backend>(*std::move(backend));
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "device backend \"%s\" is not known; this build has \"sim\" and \"nrt\"", options.kind));
}

}  // namespace neuron::rtd::hal

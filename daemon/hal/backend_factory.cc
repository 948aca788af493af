#include "daemon/hal/backend_factory.h"

#include "absl/strings/str_format.h"
#include "daemon/hal/nrt/nrt_backend.h"
#include "daemon/hal/sim/sim_backend.h"

namespace neuron::rtd::hal {

std::string GraphCompilerTorchVersion() { return sim::LinkedTorchVersion(); }

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(const BackendOptions& options,
                                                       OsSysCalls& sys_calls) {
  if (options.kind == "sim") {
    absl::StatusOr<std::unique_ptr<sim::SimBackend>> backend = sim::CreateSimBackend(
        sim::SimOptions{.preset = options.sim_preset,
                        .logical_nc_config = options.logical_nc_config,
                        .launch = {.max_host_bytes = options.sim_max_launch_host_bytes,
                                   .parallel_min_ns =
                                       int64_t{options.sim_parallel_launch_min_us} * 1000},
                        .graph_compiler = options.graph_compiler},
        sys_calls);
    if (!backend.ok()) return backend.status();
    return std::unique_ptr<Backend>(*std::move(backend));
  }
  if (options.kind == "nrt") {
    nrt::NrtOptions nrt_options{
        .visible_cores = options.nrt_visible_cores,
        .logical_nc_config = options.logical_nc_config,
        .host_launch = {.max_host_bytes = options.sim_max_launch_host_bytes,
                        .parallel_min_ns = int64_t{options.sim_parallel_launch_min_us} * 1000},
        .graph_compiler = options.graph_compiler};
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

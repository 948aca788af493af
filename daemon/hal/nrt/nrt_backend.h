// The real Trainium backend: the NeuronCores and HBM of this host through
// AWS's runtime library, libnrt, loaded at run time. The daemon owns every
// core it is given (libnrt allows one process per core) and shares them
// among its clients.
#ifndef NEURON_RTD_DAEMON_HAL_NRT_NRT_BACKEND_H_
#define NEURON_RTD_DAEMON_HAL_NRT_NRT_BACKEND_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/hal/graph_compiler.h"
#include "daemon/hal/device.h"
#include "daemon/hal/nrt/nrt_device.h"
#include "daemon/hal/nrt/nrt_runtime.h"
#include "daemon/hal/nrt/sysfs_topology.h"

namespace neuron::rtd::hal::nrt {

struct NrtOptions {
  // Where libnrt is: tried in order (names as dlopen searches them).
  std::vector<std::string> library_candidates = {"libnrt.so.1",
                                                 "/opt/aws/neuron/lib/libnrt.so.1"};
  // The cores to own (NEURON_RT_VISIBLE_CORES syntax, "0-7"); empty: the
  // environment's NEURON_RT_VISIBLE_CORES, else every core of the host.
  std::string visible_cores;
  // Physical cores per logical core (NEURON_LOGICAL_NC_CONFIG); 0: the
  // environment's, else the platform's (2 on trn2).
  uint32_t logical_nc_config = 0;
  // The Neuron driver's device directories (sysfs_topology.h): the chips'
  // names, physical cores and links. Where unreadable, the cores are taken
  // as trn2's (8 physical per chip) and the links are not known.
  std::string sysfs_root = kNeuronSysfsRoot;
  // The sim's kernels, and how the host execution path runs them.
  HostKernels host_kernels;
  // Compiles hot graphs of the host execution path; may be null.
  GraphCompiler* graph_compiler = nullptr;
};

class NrtBackend final : public Backend {
 public:
  NrtBackend(std::shared_ptr<NrtRuntime> runtime, std::shared_ptr<ModelCache> models,
             std::vector<std::unique_ptr<NrtDevice>> devices, HostKernels host_kernels,
             GraphCompiler* graph_compiler);

  BackendKind kind() const override { return BackendKind::kHardware; }
  std::span<Device* const> devices() const override { return device_views_; }
  absl::StatusOr<std::unique_ptr<Executable>> PrepareExecutable(
      const ExecutableSpec& spec) override;
  // A device with a failed core: recovering it restarts the runtime.
  bool ResetEndsEverySession(uint32_t device) const override;

  const NrtLibrary& library() const { return runtime_->library(); }

 private:
  absl::StatusOr<std::unique_ptr<Executable>> PrepareNeff(const NeffPlan& plan);

  std::shared_ptr<NrtRuntime> runtime_;
  std::shared_ptr<ModelCache> models_;
  std::atomic<uint64_t> next_neff_key_{1};
  std::vector<std::unique_ptr<NrtDevice>> devices_;
  std::vector<Device*> device_views_;
  const HostKernels host_kernels_;
  GraphCompiler* const graph_compiler_;
};

// Loads libnrt and takes the cores: NEURON_RT_VISIBLE_CORES and
// NEURON_LOGICAL_NC_CONFIG set from `options`, the host's core count (0: no
// Trainium here), nrt_init, the cores this process got, grouped by chip.
// FAILED_PRECONDITION naming the cause (no library, no cores, cores held by
// another process and how to find it).
absl::StatusOr<std::unique_ptr<NrtBackend>> CreateNrtBackend(const NrtOptions& options,
                                                             OsSysCalls& sys_calls);

}  // namespace neuron::rtd::hal::nrt

#endif  // NEURON_RTD_DAEMON_HAL_NRT_NRT_BACKEND_H_

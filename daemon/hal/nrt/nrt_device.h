// One Trainium chip driven through libnrt: its HBM as one libnrt device
// tensor per segment, copies as tensor reads and writes straight from the
// daemon's shared memory, and the host execution path for what libnrt cannot
// run (operators and graphs that no compiler has turned into NEFFs): the
// launch's tensors are read into a host mirror of the chip's HBM, the sim's
// ATen code runs on the mirror, and what it wrote is written back.
#ifndef NEURON_RTD_DAEMON_HAL_NRT_NRT_DEVICE_H_
#define NEURON_RTD_DAEMON_HAL_NRT_NRT_DEVICE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/hal/device.h"
#include "daemon/hal/nrt/launch_tensor_sets.h"
#include "daemon/hal/nrt/neff_models.h"
#include "daemon/hal/nrt/nrt_runtime.h"
#include "daemon/hal/nrt/sysfs_memory.h"
#include "daemon/hal/sim/hbm_arena.h"
#include "daemon/hal/sim/sim_executable.h"
#include "daemon/hal/sim/sim_plugin_api.h"

namespace neuron::rtd::hal::nrt {

// The sim's kernels the host execution path runs (libneuron_rtd_sim.so).
struct HostKernels {
  // Null when the plugin could not be loaded; `missing` says why.
  const sim::SimPluginApi* api = nullptr;
  std::string missing;
  sim::LaunchSettings launch;

  // FAILED_PRECONDITION naming `what` and why there is no host execution
  // path, when there is none.
  absl::Status Available(std::string_view what) const;
};

// What the host execution path runs: a sim executable, with the tensors its
// launches name (read in before the launch and written back after).
class HostExecutable final : public Executable {
 public:
  HostExecutable(std::unique_ptr<sim::SimExecutable> executable,
                 std::vector<TensorLayout> bound_tensors)
      : executable_(std::move(executable)), bound_tensors_(std::move(bound_tensors)) {}

  BackendKind backend() const override { return BackendKind::kHardware; }
  ExecutableStatus status() const override { return executable_->status(); }

  const sim::SimExecutable& executable() const { return *executable_; }
  const std::vector<TensorLayout>& bound_tensors() const { return bound_tensors_; }

 private:
  const std::unique_ptr<sim::SimExecutable> executable_;
  const std::vector<TensorLayout> bound_tensors_;
};

// Thread-safety: every method may be called from any thread. libnrt's calls
// on one core are serialised (its thread-safety is not documented); host
// executions of one chip are serialised (they share its mirror).
class NrtDevice final : public Device {
 public:
  // `vncs[i]`: libnrt's (process-relative) number of the device's logical
  // core i. `mirror` reserves the same addresses as `info`'s HBM.
  // `sysfs_dir`: the chip's directory in the driver's sysfs tree (its ECC
  // counts and its cores' memory), which need not exist; `physical_cores`:
  // the chip's physical cores (numbered within the chip) that `vncs` are.
  NrtDevice(DeviceInfo info, DeviceRange hbm, std::shared_ptr<NrtRuntime> runtime,
            std::vector<int32_t> vncs, std::unique_ptr<sim::HbmArena> mirror,
            HostKernels host_kernels, std::shared_ptr<ModelCache> models,
            std::string sysfs_dir, std::vector<uint32_t> physical_cores);
  ~NrtDevice() override;

  const DeviceInfo& info() const override { return info_; }
  DeviceRange hbm() const override { return hbm_; }
  absl::Status Acquire(DeviceRange range, uint32_t core) override;
  absl::Status Release(DeviceRange range) override;
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
  // A LAUNCH that is not a NEFF ran on the host execution path: kHost.
  Engine EngineOf(CommandKind kind, std::string_view op_name,
                  const Executable* launched) const override;

  std::string CoreFault(uint32_t core) const override;
  uint64_t HostExecutedLaunches(uint32_t core) const override;
  // Memory: the driver's accounting of the cores' memory by category where
  // sysfs serves it (sysfs_memory.h): programs' code, constants and
  // scratchpads apart, the rest less the daemon's segments as runtime
  // memory. Else what libnrt says it holds on the cores
  // (nrt_get_vnc_memory_stats, optional) less the daemon's segments, all as
  // runtime memory; a core busy executing answers with its figure from when
  // it was last idle. core_hbm: each core's figures from the driver, its
  // tensors the runtime's (the daemon's segments among them); empty where
  // the driver does not serve them. ecc: the driver's counts in sysfs
  // (sysfs_ecc.h).
  DeviceTelemetry Telemetry() const override;
  // Unloads the programs of the device's cores; when a core has failed,
  // restarts the runtime (every session of the host has ended: see
  // NrtBackend::ResetEndsEverySession).
  absl::Status Reset() override;

  // The tensors of NEFF `key` (`bytes`), loaded on the device's first core.
  absl::StatusOr<std::vector<NeffTensor>> InspectNeff(uint64_t key, std::string_view bytes);
  bool HasFailedCore() const;

 private:
  struct Segment {
    nrt_tensor_t* tensor = nullptr;
    uint64_t size = 0;
    int32_t vnc = 0;
  };
  // Where [address, address + bytes) lives: a segment's tensor and the
  // offset in it.
  struct Located {
    nrt_tensor_t* tensor = nullptr;
    uint64_t offset = 0;
    int32_t vnc = 0;
  };

  absl::StatusOr<Located> Locate(uint64_t address, uint64_t bytes) const;
  uint64_t SegmentBytes() const;
  // The driver's accounting of the device's memory, summed over its cores
  // and by logical core in `cores`; nullopt (and `cores` untouched) when a
  // core's is unreadable.
  std::optional<SysfsMemoryUsage> DriverMemoryUsage(std::vector<CoreHbm>& cores) const;
  // What libnrt holds on the device's cores, nullopt when a core never said.
  std::optional<uint64_t> LibnrtBytesInUse() const;
  size_t CoreOf(int32_t vnc) const;
  absl::Mutex& CoreLock(int32_t vnc) const { return core_locks_[CoreOf(vnc)]; }
  // Host copies of device memory for the host execution path.
  absl::Status ReadToMirror(uint64_t address, uint64_t bytes);
  absl::Status WriteFromMirror(uint64_t address, uint64_t bytes);
  absl::Status RunOnHost(const HostExecutable& executable, uint32_t core,
                         std::span<const uint64_t> bindings,
                         std::span<const uint8_t> immediates);
  absl::Status RunNeff(const LoadedNeff& neff, uint32_t core, std::span<const uint64_t> bindings);
  // The NEFF's tensor `i` as a tensor on core `vnc`: a slice of the segment
  // when the segment lives there, else a staging tensor of the core (filled
  // from the segment when `tensor` is an input).
  struct Bound {
    nrt_tensor_t* tensor = nullptr;
    bool staged = false;
    Located source;
  };
  absl::StatusOr<Bound> Bind(const NeffTensor& tensor, uint64_t address, int32_t vnc);
  // nrt_execute on core `core` (under its lock), marking the core failed
  // on a fatal status.
  absl::Status Execute(const LoadedNeff& neff, uint32_t core, nrt_model_t* model,
                       const LaunchTensorSets::Sets& sets);

  const DeviceInfo info_;
  const DeviceRange hbm_;
  const std::shared_ptr<NrtRuntime> runtime_;
  const std::vector<int32_t> vncs_;
  const std::unique_ptr<sim::HbmArena> mirror_;
  const HostKernels host_kernels_;
  const std::shared_ptr<ModelCache> models_;
  const std::string sysfs_dir_;
  const std::vector<uint32_t> physical_cores_;
  // One lock per logical core of the device, by position in vncs_.
  const std::unique_ptr<absl::Mutex[]> core_locks_;
  // By core; each used under its core's lock.
  std::vector<std::unique_ptr<LaunchTensorSets>> tensor_sets_;
  mutable absl::Mutex segments_mutex_;
  std::map<uint64_t, Segment> segments_ ABSL_GUARDED_BY(segments_mutex_);
  // Taken before segments_mutex_ and the core locks.
  absl::Mutex host_mutex_;
  // Host-executed launches by core; reductions and built-ins count on core 0.
  const std::unique_ptr<std::atomic<uint64_t>[]> host_launches_;
  // libnrt's bytes in use by core when last asked; -1: never answered.
  const std::unique_ptr<std::atomic<int64_t>[]> runtime_bytes_used_;
};

}  // namespace neuron::rtd::hal::nrt

#endif  // NEURON_RTD_DAEMON_HAL_NRT_NRT_DEVICE_H_

// The Neuron runtime of this process once nrt_init succeeded: the loaded
// library, the cores it reserved and what the daemon knows about them.
// Shared by the devices and the loaded models, so that nrt_close runs once,
// after the last tensor and model of the process is released, whatever order
// the daemon tears them down in.
#ifndef NEURON_RTD_DAEMON_HAL_NRT_NRT_RUNTIME_H_
#define NEURON_RTD_DAEMON_HAL_NRT_NRT_RUNTIME_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/hal/nrt/nrt_library.h"

namespace neuron::rtd::hal::nrt {

// Thread-safety: every method may be called from any thread; libnrt's own
// calls are serialised per core by the devices.
class NrtRuntime {
 public:
  // Takes a library on which nrt_init(framework_version) has succeeded.
  NrtRuntime(std::unique_ptr<NrtLibrary> library, std::string framework_version)
      : library_(std::move(library)), framework_version_(std::move(framework_version)) {}
  NrtRuntime(const NrtRuntime&) = delete;
  NrtRuntime& operator=(const NrtRuntime&) = delete;
  ~NrtRuntime() { library_->api().close(); }

  const NrtApi& api() const { return library_->api(); }
  const NrtLibrary& library() const { return *library_; }

  // The device tensors of segments, counted so that Restart knows when the
  // runtime holds nothing of the daemon's.
  void AddSegmentTensor();
  void RemoveSegmentTensor();

  // Marks core `vnc` (libnrt's number) failed, with why; Fault is empty for
  // a working core.
  void SetFault(int32_t vnc, std::string reason);
  std::string Fault(int32_t vnc) const;

  // nrt_close, then nrt_init with the same cores: libnrt recovers an
  // unrecoverable core only so. Waits up to `timeout` for every segment
  // tensor to be freed (no launch runs then: a launch holds its segments),
  // calls `unload_models`, then restarts; the caller lets nothing else call
  // libnrt meanwhile (the sessions are gone and new ones wait). Clears every
  // fault once the runtime is up again.
  absl::Status Restart(absl::Duration timeout, absl::FunctionRef<void()> unload_models);

  // Runs `call`, a libnrt call that may come at any time (a stats query),
  // unless Restart is under way or about to close the runtime: false then.
  // Never waits.
  bool CallUnlessRestarting(absl::FunctionRef<void()> call) const;

 private:
  std::unique_ptr<NrtLibrary> library_;
  const std::string framework_version_;
  mutable absl::Mutex mutex_;
  int64_t segment_tensors_ ABSL_GUARDED_BY(mutex_) = 0;
  std::map<int32_t, std::string> faults_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace neuron::rtd::hal::nrt

#endif  // NEURON_RTD_DAEMON_HAL_NRT_NRT_RUNTIME_H_

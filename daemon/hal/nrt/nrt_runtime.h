// The Neuron runtime of this process once nrt_init succeeded: the loaded
// library and the cores it reserved. Shared by the devices and the loaded
// models, so that nrt_close runs once, after the last tensor and model of the
// process is released, whatever order the daemon tears them down in.
#ifndef NEURON_RTD_DAEMON_HAL_NRT_NRT_RUNTIME_H_
#define NEURON_RTD_DAEMON_HAL_NRT_NRT_RUNTIME_H_

#include <memory>

#include "daemon/hal/nrt/nrt_library.h"

namespace neuron::rtd::hal::nrt {

// Thread-safety: immutable; libnrt's calls are serialised by the devices.
class NrtRuntime {
 public:
  // Takes a library on which nrt_init has succeeded.
  explicit NrtRuntime(std::unique_ptr<NrtLibrary> library) : library_(std::move(library)) {}
  NrtRuntime(const NrtRuntime&) = delete;
  NrtRuntime& operator=(const NrtRuntime&) = delete;
  ~NrtRuntime() { library_->api().close(); }

  const NrtApi& api() const { return library_->api(); }
  const NrtLibrary& library() const { return *library_; }

 private:
  std::unique_ptr<NrtLibrary> library_;
};

}  // namespace neuron::rtd::hal::nrt

#endif  // NEURON_RTD_DAEMON_HAL_NRT_NRT_RUNTIME_H_

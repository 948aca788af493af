// A graph's tier-1 code on the sim: the AOTInductor package the compiler
// worker built, loaded into the daemon (extracted and dlopened once) and
// run on CPU tensors that wrap HBM, writing the graph's outputs in place.
// PyTorch headers: include only from the sim's own .cc files.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_COMPILED_PACKAGE_H_
#define NEURON_RTD_DAEMON_HAL_SIM_COMPILED_PACKAGE_H_

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace torch::inductor {
class AOTIModelPackageLoader;
}

namespace neuron::rtd::hal::sim {

// Thread-safety: Run may be called from any core's worker; runs of one
// package are serialized.
class CompiledPackage {
 public:
  // INVALID_ARGUMENT naming the package when it does not load.
  static absl::StatusOr<std::unique_ptr<CompiledPackage>> Load(const std::string& path);
  ~CompiledPackage();

  // Runs the model on `tensors`: the graph's inputs, then its outputs'
  // buffers. Throws the kernels' c10::Error as they do.
  void Run(std::vector<at::Tensor> tensors) const;

 private:
  explicit CompiledPackage(std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader);

  mutable absl::Mutex mutex_;
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_COMPILED_PACKAGE_H_

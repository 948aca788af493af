// NEFFs on the cores: a NEFF executable (LoadedNeff) is loaded with nrt_load
// once per core that runs it, on first use, and kept loaded; when a core's
// memory runs out (NRT_RESOURCE), the models least recently used there are
// unloaded first (ModelCache).
#ifndef NEURON_RTD_DAEMON_HAL_NRT_NEFF_MODELS_H_
#define NEURON_RTD_DAEMON_HAL_NRT_NEFF_MODELS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/hal/neff.h"
#include "daemon/hal/nrt/nrt_runtime.h"

namespace neuron::rtd::hal::nrt {

// Thread-safety: every method may be called from any thread; Get and Forget
// of one core run under that core's lock (NrtDevice's), so no model is
// unloaded while it executes.
class ModelCache {
 public:
  explicit ModelCache(std::shared_ptr<NrtRuntime> runtime) : runtime_(std::move(runtime)) {}
  ModelCache(const ModelCache&) = delete;
  ModelCache& operator=(const ModelCache&) = delete;
  ~ModelCache();

  // NEFF `neff`'s model on core `vnc`: loaded already, or loaded now from
  // `bytes`, other models of the core unloaded least recently used first
  // while the core lacks memory.
  absl::StatusOr<nrt_model_t*> Get(uint64_t neff, std::string_view bytes, int32_t vnc);
  // Unloads every model of NEFF `neff` (its executable is gone).
  void Forget(uint64_t neff);
  // Unloads every model of core `vnc` (under its lock), or of every core;
  // they load again at their next launch.
  void ForgetCore(int32_t vnc);
  void UnloadAll();
  uint64_t loaded() const;
  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    nrt_model_t* model = nullptr;
    uint64_t last_use = 0;
  };

  const std::shared_ptr<NrtRuntime> runtime_;
  mutable absl::Mutex mutex_;
  std::map<std::pair<uint64_t, int32_t>, Entry> models_ ABSL_GUARDED_BY(mutex_);
  uint64_t uses_ ABSL_GUARDED_BY(mutex_) = 0;
  std::atomic<uint64_t> evictions_{0};
};

// What the nrt backend prepares from a NEFF.
// Thread-safety: immutable but for its launch count.
class LoadedNeff final : public NeffExecutable {
 public:
  LoadedNeff(NeffPlan plan, std::vector<NeffTensor> tensors, std::shared_ptr<ModelCache> models,
             uint64_t key)
      : plan_(std::move(plan)), tensors_(std::move(tensors)), models_(std::move(models)),
        key_(key) {}
  ~LoadedNeff() override { models_->Forget(key_); }

  BackendKind backend() const override { return BackendKind::kHardware; }
  const std::vector<NeffTensor>& tensors() const override { return tensors_; }
  ExecutableStatus status() const override {
    return ExecutableStatus{.launches = launches_.load(std::memory_order_relaxed), .tier = 1};
  }

  const NeffPlan& plan() const { return plan_; }
  uint64_t key() const { return key_; }
  void CountLaunch() const { launches_.fetch_add(1, std::memory_order_relaxed); }

 private:
  const NeffPlan plan_;
  const std::vector<NeffTensor> tensors_;
  const std::shared_ptr<ModelCache> models_;
  const uint64_t key_;
  mutable std::atomic<uint64_t> launches_{0};
};

// The tensors of a loaded model, from nrt_get_model_tensor_info; element
// types in PyTorch's numbering, read by the runtime's `version` (libnrt
// renumbered them in its 2.x releases) and checked against each size.
absl::StatusOr<std::vector<NeffTensor>> ModelTensors(const NrtRuntime& runtime,
                                                     nrt_model_t* model);

}  // namespace neuron::rtd::hal::nrt

#endif  // NEURON_RTD_DAEMON_HAL_NRT_NEFF_MODELS_H_

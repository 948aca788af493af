// The daemon's GraphCompiler: a thread that takes graphs in order, has the
// compiler worker compile each one it does not find in the disk cache,
// stores the package there and hands it to whoever asked. At start it
// finds the worker's interpreter (the first of the candidates whose torch is
// the daemon's) and keeps that worker running, so that the first graph does
// not wait for torch's import and a daemon that cannot compile says so at
// once. When the worker cannot be used (no Python with this daemon's torch,
// a worker that will not start) every request is answered with why, once
// logged: graphs keep running on tier 0.
#ifndef NEURON_RTD_DAEMON_COMPILER_COMPILE_SERVICE_H_
#define NEURON_RTD_DAEMON_COMPILER_COMPILE_SERVICE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/compiler/artifact_cache.h"
#include "daemon/compiler/compile_key.h"
#include "daemon/compiler/compiler_worker.h"
#include "daemon/hal/graph_compiler.h"

namespace neuron::rtd::compiler {

struct CompileServiceOptions {
  // worker.python is ignored: the worker runs the first of `pythons` whose
  // torch is `torch_version`.
  WorkerOptions worker;
  std::vector<std::string> pythons;
  ArtifactCacheOptions cache;
  uint64_t compile_after_launches = 2;
  // The torch version the daemon runs (the worker must have the same), and
  // the CPU it runs on: both are part of a package's key.
  std::string torch_version;
  std::string cpu_id;
};

struct CompileStats {
  uint64_t builds = 0;
  uint64_t failures = 0;
  uint64_t cache_hits = 0;
  uint64_t queued = 0;
  uint64_t worker_starts = 0;
  double build_seconds = 0;
  // A worker started with the daemon's torch: `python` runs it, with torch
  // `worker_torch_version`. Neither ready nor unavailable: still looking.
  bool ready = false;
  std::string python;
  std::string worker_torch_version;
  std::string unavailable;  // why the worker cannot be used, if it cannot
};

// Thread-safety: every method may be called from any thread.
class CompileService final : public hal::GraphCompiler {
 public:
  // Opens the cache and starts the service's thread, which starts the
  // worker. FAILED_PRECONDITION when the cache directory is not the
  // daemon's own.
  static absl::StatusOr<std::unique_ptr<CompileService>> Create(CompileServiceOptions options,
                                                                OsSysCalls& sys_calls);
  ~CompileService() override;

  uint64_t compile_after_launches() const override { return options_.compile_after_launches; }
  std::optional<Package> Cached(const hal::GraphPlan& graph) override;
  void Request(const hal::GraphPlan& graph, Ready ready) override;

  CompileStats stats() const;
  ArtifactCache& cache() { return *cache_; }
  // The key of `graph`'s package: the graph's content (not its name),
  // torch's version, the compiler's flags and the CPU.
  CompileKey KeyOf(const hal::GraphPlan& graph) const;

 private:
  struct Job {
    CompileKey key;
    std::string name;
    std::string graph_json;
    Ready ready;
  };

  CompileService(CompileServiceOptions options, std::unique_ptr<ArtifactCache> cache);
  void Loop();
  // Starts the worker with the first interpreter whose torch is the
  // daemon's, or records why none can be used.
  void FindWorker();
  // OK when `worker` runs the daemon's torch.
  absl::Status CheckTorch(const WorkerInfo& worker) const;
  absl::StatusOr<Package> Build(const Job& job);

  const CompileServiceOptions options_;
  const std::unique_ptr<ArtifactCache> cache_;
  CompilerWorker worker_;  // the service's thread only
  uint64_t next_output_ = 0;  // the service's thread only

  mutable absl::Mutex mutex_;
  std::deque<Job> jobs_ ABSL_GUARDED_BY(mutex_);
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  CompileStats stats_ ABSL_GUARDED_BY(mutex_);
  std::thread thread_;
};

// "model name" and the feature flags of this host's CPU, hashed: compiled
// code targets the CPU it was built on (-march=native).
std::string HostCpuId();

}  // namespace neuron::rtd::compiler

#endif  // NEURON_RTD_DAEMON_COMPILER_COMPILE_SERVICE_H_

// Compiled graph packages on disk, kept across processes and daemon
// restarts: a second process, or the daemon after a restart, runs a graph
// compiled before without compiling it again. Keyed by what determines the
// code (the graph, torch's version, the compiler's flags, the CPU), bounded
// in bytes with the least recently used going first. The directory is the
// daemon's own (mode 0700); a package is checked against the hash recorded
// when it was stored before it is handed out.
#ifndef NEURON_RTD_DAEMON_COMPILER_ARTIFACT_CACHE_H_
#define NEURON_RTD_DAEMON_COMPILER_ARTIFACT_CACHE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/common/os_sys_calls.h"

namespace neuron::rtd::compiler {

struct ArtifactCacheOptions {
  std::string directory;
  uint64_t max_bytes = 4ull << 30;
};

// One stored package, as `neuronctl cache ls` shows it.
struct StoredArtifact {
  std::string key;
  std::string graph_name;
  uint64_t bytes = 0;
  double compile_seconds = 0;
};

// Thread-safety: every method may be called from any thread.
class ArtifactCache {
 public:
  // Creates the directory (0700) if it is missing. FAILED_PRECONDITION when
  // it is a symlink, is not owned by the daemon's user, or others may write
  // to it: the daemon loads native code from it.
  static absl::StatusOr<std::unique_ptr<ArtifactCache>> Open(ArtifactCacheOptions options,
                                                             OsSysCalls& sys_calls);

  // The package stored under `key` when its content still has its recorded
  // hash (a corrupt one is removed); marks it used.
  std::optional<std::string> Find(const std::string& key);

  // Moves the file `package` into the cache under `key`, records its hash,
  // size, `graph_name` and `compile_seconds`, then evicts least recently
  // used packages until the cache fits its budget (never the new one).
  // Returns the stored package's path.
  absl::StatusOr<std::string> Store(const std::string& key, const std::string& package,
                                    const std::string& graph_name, double compile_seconds);

  // Removes every package; returns how many.
  uint64_t Clear();

  std::vector<StoredArtifact> List() const;
  uint64_t bytes() const;
  const std::string& directory() const { return options_.directory; }

 private:
  ArtifactCache(ArtifactCacheOptions options, OsSysCalls& sys_calls)
      : options_(std::move(options)), sys_calls_(sys_calls) {}
  void EvictLocked(const std::string& keep) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void RemoveLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  std::vector<StoredArtifact> ListLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const ArtifactCacheOptions options_;
  OsSysCalls& sys_calls_;
  mutable absl::Mutex mutex_;
};

}  // namespace neuron::rtd::compiler

#endif  // NEURON_RTD_DAEMON_COMPILER_ARTIFACT_CACHE_H_

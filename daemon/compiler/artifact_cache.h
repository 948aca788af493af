// Compiled graph packages on disk, kept across processes and daemon
// restarts: a second process, or the daemon after a restart, runs a graph
// compiled before without compiling it again. Keyed by what determines the
// code (a CompileKey), bounded in bytes with the least recently used going
// first. The directory is the daemon's user's own (mode 0700); a package is
// checked against the hash recorded when it was stored before it is handed
// out.
//
// Several daemons (of one user, on one host or many, the directory on a
// shared file system) may use one directory at once, without a lock: a
// package is written under a temporary name and renamed to a name that holds
// its content hash, so a published package never changes; its record
// (KEY.json, naming the package) is then replaced by a rename. A reader sees
// the old record or the new one, each naming a whole package. Packages no
// record names any more (two daemons stored the same key) and temporary
// files a crashed writer left are removed once they are old.
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
#include "absl/time/time.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/compiler/compile_key.h"

namespace neuron::rtd::compiler {

struct ArtifactCacheOptions {
  std::string directory;
  uint64_t max_bytes = 4ull << 30;
  // Files no record names are removed once older than this: long enough
  // that another daemon between publishing a package and its record keeps it.
  absl::Duration orphan_age = absl::Minutes(10);
};

// One stored package, as `neuronctl cache ls` and `cache why` show it.
struct StoredArtifact {
  std::string key;  // parts.Digest(); empty parts for a record without them
  CompileKey parts;
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

  // The package stored under `key` (a CompileKey's digest) when its content
  // still has its recorded hash (a corrupt one is removed); marks it used.
  // The path names an immutable file.
  std::optional<std::string> Find(const std::string& key);

  // Moves the file `package` into the cache under `key`, records its hash,
  // size, the key's parts, `graph_name` and `compile_seconds`, then evicts
  // least recently used packages until the cache fits its budget (never the
  // new one). Returns the stored package's path.
  absl::StatusOr<std::string> Store(const CompileKey& key, const std::string& package,
                                    const std::string& graph_name, double compile_seconds);

  // Removes every package (and every file a writer left); returns how many
  // packages.
  uint64_t Clear();

  std::vector<StoredArtifact> List() const;
  uint64_t bytes() const;
  const std::string& directory() const { return options_.directory; }

 private:
  ArtifactCache(ArtifactCacheOptions options, std::string writer, OsSysCalls& sys_calls)
      : options_(std::move(options)), writer_(std::move(writer)), sys_calls_(sys_calls) {}
  // A name no other writer (daemon, cache of this process) uses for a
  // temporary file.
  std::string TemporaryName(const std::string& stem) const;
  void EvictLocked(const std::string& keep) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Removes the record of `key` and the package it names.
  void RemoveLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Removes packages no record names and temporary files, older than
  // `min_age`.
  void RemoveOrphansLocked(absl::Duration min_age) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  std::vector<StoredArtifact> ListLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const ArtifactCacheOptions options_;
  const std::string writer_;  // host and pid
  OsSysCalls& sys_calls_;
  mutable absl::Mutex mutex_;
};

}  // namespace neuron::rtd::compiler

#endif  // NEURON_RTD_DAEMON_COMPILER_ARTIFACT_CACHE_H_

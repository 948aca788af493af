// Executables loaded into the daemon, shared host-wide: keyed by the hash of
// their content, so that a second process reuses what the first loaded
// without sending it again. Executables are data (an operator and its
// argument layouts), never code.
#ifndef NEURON_RTD_DAEMON_EXEC_EXECUTABLE_CACHE_H_
#define NEURON_RTD_DAEMON_EXEC_EXECUTABLE_CACHE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/hal/device.h"
#include "daemon/hal/eager_op.h"
#include "neuron/rtd/abi/command_ring.h"

namespace neuron::rtd::exec {

struct Executable {
  uint64_t id = 0;
  std::string content_hash;
  std::string name;
  uint64_t size_bytes = 0;
  hal::EagerOpPlan plan;
  // LAUNCH must pass at least this many addresses.
  uint32_t address_count = 0;
  // What the backend prepared from `plan` at load.
  std::shared_ptr<const hal::Executable> prepared;
};

struct LoadResult {
  std::shared_ptr<const Executable> executable;
  bool cache_hit = false;
};

struct CacheStats {
  uint64_t entries = 0;
  uint64_t memory_bytes = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
};

// Thread-safety: every method may be called from any thread.
// Lifetime: the backend outlives the cache.
class ExecutableCache {
 public:
  explicit ExecutableCache(hal::Backend& backend, uint64_t max_entries = 65536)
      : backend_(backend), max_entries_(max_entries) {}

  // The executable with this content hash, if loaded.
  std::shared_ptr<const Executable> Lookup(std::string_view content_hash);
  std::shared_ptr<const Executable> Find(uint64_t id) const;

  // Decodes and checks `body` (a serialized neuron.rtd.v1.ExecutableBody
  // whose hash must be `content_hash`), then has the backend prepare it.
  // INVALID_ARGUMENT naming the field for a malformed body or one that does
  // not fit its operator's schema; RESOURCE_EXHAUSTED when the cache is full.
  absl::StatusOr<LoadResult> Load(std::string_view content_hash, std::string_view name,
                                  std::string_view body);

  CacheStats stats() const;

 private:
  hal::Backend& backend_;
  const uint64_t max_entries_;
  mutable absl::Mutex mutex_;
  std::map<std::string, std::shared_ptr<const Executable>, std::less<>> by_hash_
      ABSL_GUARDED_BY(mutex_);
  std::map<uint64_t, std::shared_ptr<const Executable>> by_id_ ABSL_GUARDED_BY(mutex_);
  uint64_t next_id_ ABSL_GUARDED_BY(mutex_) = NEURON_RTD_FIRST_LOADED_EXECUTABLE;
  uint64_t memory_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
  uint64_t hits_ ABSL_GUARDED_BY(mutex_) = 0;
  uint64_t misses_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace neuron::rtd::exec

#endif  // NEURON_RTD_DAEMON_EXEC_EXECUTABLE_CACHE_H_

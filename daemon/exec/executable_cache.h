// Executables loaded into the daemon, shared host-wide: keyed by the hash of
// their content, so that a second process reuses what the first loaded
// without sending it again.
//
// A live session *holds* each executable it loaded or looked up; only held
// executables can be launched (the session resolves LAUNCH ids against its
// holds). The cache has a byte budget: when a load would pass it, the
// executables no session holds go first, least recently released first.
// Each user's sessions together may hold a bounded number of bytes, so one
// user cannot take the whole budget.
#ifndef NEURON_RTD_DAEMON_EXEC_EXECUTABLE_CACHE_H_
#define NEURON_RTD_DAEMON_EXEC_EXECUTABLE_CACHE_H_

#include <sys/types.h>

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/exec/executable.h"
#include "daemon/exec/executable_decoder.h"
#include "daemon/hal/device.h"
#include "neuron/rtd/abi/command_ring.h"

namespace neuron::rtd::exec {

struct CacheLimits {
  // Bytes of every cached executable together.
  uint64_t max_bytes = 1ull << 30;
  // Bytes of the executables one user's sessions hold together.
  uint64_t max_bytes_per_user = 512ull << 20;
};

// What an executable costs beyond its body: the decoded plan, the prepared
// form and the cache's bookkeeping. It also bounds the entry count.
inline constexpr uint64_t kExecutableOverheadBytes = 4096;

class ExecutableCache;

// A session's claim on a cached executable: while any hold exists the
// executable is not evicted, and its bytes count (once) against the quota of
// each user holding it. Move-only; destroying it releases the claim.
// Lifetime: must not outlive the cache.
class ExecutableHold {
 public:
  ExecutableHold() = default;
  ExecutableHold(ExecutableHold&& other) noexcept;
  ExecutableHold& operator=(ExecutableHold&& other) noexcept;
  ExecutableHold(const ExecutableHold&) = delete;
  ExecutableHold& operator=(const ExecutableHold&) = delete;
  ~ExecutableHold();

  const std::shared_ptr<const Executable>& executable() const { return executable_; }

 private:
  friend class ExecutableCache;
  ExecutableHold(ExecutableCache* cache, std::shared_ptr<const Executable> executable, uid_t uid)
      : cache_(cache), executable_(std::move(executable)), uid_(uid) {}
  void Reset();

  ExecutableCache* cache_ = nullptr;
  std::shared_ptr<const Executable> executable_;
  uid_t uid_ = 0;
};

struct LoadResult {
  ExecutableHold hold;
  bool cache_hit = false;
};

struct CacheStats {
  uint64_t entries = 0;
  // Charged bytes (bodies plus kExecutableOverheadBytes each).
  uint64_t memory_bytes = 0;
  uint64_t held_entries = 0;
  uint64_t held_bytes = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
  CacheLimits limits;
};

// Thread-safety: every method may be called from any thread.
// Lifetime: the backend outlives the cache; every hold is gone before it.
class ExecutableCache {
 public:
  explicit ExecutableCache(hal::Backend& backend, const CacheLimits& limits = {})
      : backend_(backend), limits_(limits) {}
  ExecutableCache(const ExecutableCache&) = delete;
  ExecutableCache& operator=(const ExecutableCache&) = delete;

  // The executable with this content hash, held for `uid`; nullopt when it
  // is not cached. RESOURCE_EXHAUSTED when holding it would pass the user's
  // quota.
  absl::StatusOr<std::optional<ExecutableHold>> LookupAndHold(std::string_view content_hash,
                                                             uid_t uid);

  // Decodes and checks `body` (a serialized neuron.rtd.v1.ExecutableBody of
  // `kind` whose hash must be `content_hash`), has the backend prepare it, caches it
  // and holds it for `uid`. INVALID_ARGUMENT naming the field for a malformed
  // body or one that does not fit its operator's schema; RESOURCE_EXHAUSTED
  // when the user's quota, or the budget after evicting every executable no
  // session holds, has no room for it.
  absl::StatusOr<LoadResult> Load(std::string_view content_hash, std::string_view name,
                                  std::string_view body, ExecutableBodyKind kind, uid_t uid);

  // Drops every executable no session holds; returns how many.
  uint64_t EvictUnheld();

  CacheStats stats() const;

  // One cached executable, as `neuronctl cache ls` shows it.
  struct Listing {
    std::shared_ptr<const Executable> executable;
    uint64_t charged_bytes = 0;
    uint32_t holders = 0;  // users whose sessions hold it
  };
  // Every cached executable, by id.
  std::vector<Listing> List() const;
  // Bytes of the executables `uid`'s sessions hold.
  uint64_t held_bytes_of_user(uid_t uid) const;

 private:
  friend class ExecutableHold;

  struct Entry {
    std::shared_ptr<const Executable> executable;
    uint64_t charged_bytes = 0;
    std::map<uid_t, uint32_t> holds_by_user;
    // Position in unheld_ while no session holds the entry.
    std::optional<std::list<uint64_t>::iterator> unheld_position;
  };

  absl::StatusOr<ExecutableHold> HoldLocked(Entry& entry, uid_t uid)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void Release(uint64_t id, uid_t uid);
  void EvictLocked(std::map<uint64_t, Entry>::iterator entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Evicts unheld executables, oldest first, until `bytes` more fit.
  absl::Status MakeRoomLocked(uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  hal::Backend& backend_;
  const CacheLimits limits_;
  mutable absl::Mutex mutex_;
  std::map<std::string, uint64_t, std::less<>> id_by_hash_ ABSL_GUARDED_BY(mutex_);
  std::map<uint64_t, Entry> entries_ ABSL_GUARDED_BY(mutex_);
  // Ids no session holds, least recently released first.
  std::list<uint64_t> unheld_ ABSL_GUARDED_BY(mutex_);
  std::map<uid_t, uint64_t> held_bytes_by_user_ ABSL_GUARDED_BY(mutex_);
  uint64_t next_id_ ABSL_GUARDED_BY(mutex_) = NEURON_RTD_FIRST_LOADED_EXECUTABLE;
  uint64_t memory_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
  uint64_t held_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
  uint64_t hits_ ABSL_GUARDED_BY(mutex_) = 0;
  uint64_t misses_ ABSL_GUARDED_BY(mutex_) = 0;
  uint64_t evictions_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace neuron::rtd::exec

#endif  // NEURON_RTD_DAEMON_EXEC_EXECUTABLE_CACHE_H_

// The client's half of a session's profile: which cores profile, when each
// profiled command was submitted, and the daemon's records matched to them.
#ifndef NEURONRT_SRC_INTERNAL_PROFILE_COLLECTOR_H_
#define NEURONRT_SRC_INTERNAL_PROFILE_COLLECTOR_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "neuronrt/profiling.h"

namespace neuronrt::internal {

// Correlation ids with this bit are the library's own: a timing event's
// SIGNAL (Stream::RecordTimed), never handed to a profiler.
inline constexpr uint64_t kTimingCorrelation = uint64_t{1} << 63;

// Thread-safety: every method may be called from any thread. Profiles() is
// the only one on the submit path when nothing profiles: two relaxed loads.
class ProfileCollector {
 public:
  // Commands on `options.cores` (empty: every core) submitted from now on
  // are profiled; cores past kMaxCores are profiled only when `cores` is
  // empty.
  void Start(const ProfilingOptions& options);
  void Stop();
  // Whether this client records its own runtime spans for `core`.
  bool RecordsSpans(uint32_t core) const {
    return runtime_spans_.load(std::memory_order_relaxed) && Profiles(core);
  }
  // A span of the calling thread's work, from `start_ns` to now.
  void AddSpan(std::string name, std::string detail, int64_t start_ns);
  bool Profiles(uint32_t core) const {
    if (!active_.load(std::memory_order_relaxed)) return false;
    if (all_cores_.load(std::memory_order_relaxed)) return true;
    return core < kMaxCores &&
           (core_mask_[core / 64].load(std::memory_order_relaxed) >> (core % 64) & 1) != 0;
  }

  // A profiled command went into stream `stream_id`'s ring as `sequence`.
  void NoteSubmit(uint64_t stream_id, uint64_t sequence);
  // Records drained from the daemon.
  void Absorb(std::vector<ProfiledCommand> commands, std::vector<RuntimeSpan> spans,
              uint64_t dropped);
  // Everything absorbed since the last call, commands joined with their
  // submit times.
  ProfileRecords Take();
  // When the timing SIGNAL at (stream, sequence) ran, once absorbed.
  std::optional<int64_t> TimingEnd(uint64_t stream_id, uint64_t sequence);

 private:
  static constexpr uint32_t kMaxCores = 256;
  // Submits remembered until their record comes back; past this (records
  // the daemon dropped, a client that profiles and never drains) the
  // oldest are forgotten.
  static constexpr size_t kMaxPendingSubmits = 1 << 20;
  static constexpr size_t kMaxTimings = 1 << 16;
  struct Submit {
    int64_t ns = 0;
    int32_t thread = 0;
  };
  using Key = std::pair<uint64_t, uint64_t>;  // (stream id, sequence)

  std::atomic<bool> active_{false};
  std::atomic<bool> all_cores_{false};
  std::atomic<bool> runtime_spans_{false};
  std::array<std::atomic<uint64_t>, kMaxCores / 64> core_mask_{};

  absl::Mutex mutex_;
  absl::flat_hash_map<Key, Submit> submits_ ABSL_GUARDED_BY(mutex_);
  std::deque<Key> submit_order_ ABSL_GUARDED_BY(mutex_);
  ProfileRecords records_ ABSL_GUARDED_BY(mutex_);
  absl::flat_hash_map<Key, int64_t> timings_ ABSL_GUARDED_BY(mutex_);
  std::deque<Key> timing_order_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace neuronrt::internal

#endif  // NEURONRT_SRC_INTERNAL_PROFILE_COLLECTOR_H_

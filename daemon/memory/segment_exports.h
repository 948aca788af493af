// Handles to segments that one process shares with others (torch's
// multiprocessing of device tensors).
//
// A handle is 16 random bytes naming a segment. It does not keep the segment
// alive: it is redeemable while some session (the exporter, an importer) or
// a queued command still holds the segment, and only by a session of the
// exporter's user opened through the same grant (or none), so a handle that
// leaks to another user or container is worth nothing. Exporting a segment
// again gives the same handle, so a producer that shares one tensor many
// times holds one entry; entries whose segments are gone are pruned when the
// registry is full.
#ifndef NEURON_RTD_DAEMON_MEMORY_SEGMENT_EXPORTS_H_
#define NEURON_RTD_DAEMON_MEMORY_SEGMENT_EXPORTS_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/memory/segment.h"

namespace neuron::rtd::memory {

inline constexpr size_t kSegmentHandleBytes = 16;

// Who may redeem a handle: sessions of this user opened through this grant
// ("" for none).
struct SegmentOwner {
  uid_t uid = 0;
  std::string grant;

  bool operator==(const SegmentOwner&) const = default;
};

struct ExportedSegment {
  SegmentRef segment;
  // Host-wide core whose HBM holds it.
  uint32_t core = 0;
};

// Thread-safety: every method may be called from any thread.
class SegmentExports {
 public:
  // `random_handle` gives kSegmentHandleBytes unguessable bytes (tests pass
  // a deterministic one).
  using HandleSource = std::function<absl::StatusOr<std::string>()>;
  explicit SegmentExports(HandleSource random_handle, size_t max_entries = kDefaultMaxEntries)
      : random_handle_(std::move(random_handle)), max_entries_(max_entries) {}

  static constexpr size_t kDefaultMaxEntries = 1 << 16;

  // The handle of `segment` (held by a session of `owner`), made at the
  // first export. RESOURCE_EXHAUSTED when max_entries live segments are
  // exported already.
  absl::StatusOr<std::string> Export(const SegmentRef& segment, uint32_t core,
                                     const SegmentOwner& owner);

  // The segment `handle` names. INVALID_ARGUMENT for a handle of the wrong
  // size, NOT_FOUND for one never made or whose segment is gone (both say
  // so without telling which), PERMISSION_DENIED for another user or grant.
  absl::StatusOr<ExportedSegment> Redeem(std::string_view handle, const SegmentOwner& caller);

  // Whether a process other than the caller may still use the segment: it was exported more often
  // than redeemed, or more than `caller_references` references to it exist
  // (other sessions' tables, queued commands). False for a segment never
  // exported or gone.
  bool InUseElsewhere(uint64_t segment_id, long caller_references) const;

  size_t size() const;

 private:
  struct Entry {
    std::weak_ptr<const Segment> segment;
    uint64_t segment_id = 0;
    uint32_t core = 0;
    SegmentOwner owner;
    // Exports not yet matched by a Redeem.
    uint64_t unredeemed = 0;
  };

  void PruneExpired() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const HandleSource random_handle_;
  const size_t max_entries_;
  mutable absl::Mutex mutex_;
  std::map<std::string, Entry, std::less<>> by_handle_ ABSL_GUARDED_BY(mutex_);
  std::map<uint64_t, std::string> handle_of_segment_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace neuron::rtd::memory

#endif  // NEURON_RTD_DAEMON_MEMORY_SEGMENT_EXPORTS_H_

// Device memory segments and who owns them.
#ifndef NEURON_RTD_DAEMON_MEMORY_SEGMENT_H_
#define NEURON_RTD_DAEMON_MEMORY_SEGMENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/hal/device.h"
#include "daemon/memory/device_allocator.h"

namespace neuron::rtd::memory {

// A range of HBM that one session owns. Shared by the session's table and by
// every queued command that names it: the HBM goes back to the allocator only
// when the last holder lets go, so freed memory is never reused while a
// command that uses it is still queued.
class Segment {
 public:
  Segment(uint64_t id, hal::DeviceRange range, DeviceAllocator& allocator)
      : id_(id), range_(range), allocator_(allocator) {}
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment();

  uint64_t id() const { return id_; }
  const hal::DeviceRange& range() const { return range_; }
  uint32_t device_index() const { return allocator_.device_index(); }

 private:
  const uint64_t id_;
  const hal::DeviceRange range_;
  DeviceAllocator& allocator_;
};

using SegmentRef = std::shared_ptr<const Segment>;

// The segments of one session, by address.
// Thread-safety: every method may be called from any thread.
class SegmentTable {
 public:
  void Insert(SegmentRef segment);

  // Takes a segment out of the table; commands read after this no longer
  // resolve its addresses. NOT_FOUND when the session has no such segment.
  absl::StatusOr<SegmentRef> Remove(uint64_t segment_id);

  // The segment of that id. NOT_FOUND when the session has no such segment.
  absl::StatusOr<SegmentRef> Find(uint64_t segment_id) const;

  // The segment that holds all of [address, address + length).
  // INVALID_ARGUMENT naming the range when none of this session's does
  // (another session's memory included), or when it runs past the end of one.
  absl::StatusOr<SegmentRef> Resolve(uint64_t address, uint64_t length) const;

  uint64_t bytes() const;
  size_t size() const;
  std::vector<SegmentRef> TakeAll();

 private:
  mutable absl::Mutex mutex_;
  std::map<uint64_t, SegmentRef> by_address_ ABSL_GUARDED_BY(mutex_);
  uint64_t bytes_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace neuron::rtd::memory

#endif  // NEURON_RTD_DAEMON_MEMORY_SEGMENT_H_

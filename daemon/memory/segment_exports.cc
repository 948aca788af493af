#include "daemon/memory/segment_exports.h"

#include "absl/strings/str_format.h"

namespace neuron::rtd::memory {

absl::StatusOr<std::string> SegmentExports::Export(const SegmentRef& segment, uint32_t core,
                                                   const SegmentOwner& owner) {
  absl::MutexLock lock(&mutex_);
  // Segment ids are never reused, and only sessions of the first
  // exporter's user and grant can hold the segment to export it again.
  if (auto known = handle_of_segment_.find(segment->id()); known != handle_of_segment_.end()) {
    ++by_handle_.find(known->second)->second.unredeemed;
    return known->second;
  }
  if (by_handle_.size() >= max_entries_) PruneExpired();
  if (by_handle_.size() >= max_entries_) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%d segments are shared already, the most the daemon keeps handles for; free some",
        max_entries_));
  }
  absl::StatusOr<std::string> handle = random_handle_();
  if (!handle.ok()) return handle.status();
  if (handle->size() != kSegmentHandleBytes || by_handle_.contains(*handle)) {
    return absl::InternalError("the handle source gave a short or repeated handle");
  }
  by_handle_.emplace(*handle, Entry{.segment = segment, .segment_id = segment->id(),
                                    .core = core, .owner = owner, .unredeemed = 1});
  handle_of_segment_[segment->id()] = *handle;
  return handle;
}

absl::StatusOr<ExportedSegment> SegmentExports::Redeem(std::string_view handle,
                                                       const SegmentOwner& caller) {
  if (handle.size() != kSegmentHandleBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a segment handle has %d bytes; this one has %d", kSegmentHandleBytes, handle.size()));
  }
  absl::MutexLock lock(&mutex_);
  auto entry = by_handle_.find(handle);
  SegmentRef segment = entry == by_handle_.end() ? nullptr : entry->second.segment.lock();
  if (segment == nullptr) {
    return absl::NotFoundError(
        "no shared segment has this handle: it was never made here, or every process that "
        "held its memory has freed it (the sender must keep a shared tensor alive until the "
        "receiver has it)");
  }
  const SegmentOwner& owner = entry->second.owner;
  if (owner.uid != caller.uid) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "the shared segment belongs to uid %d; uid %d may not use it", owner.uid, caller.uid));
  }
  if (owner.grant != caller.grant) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "the shared segment was shared %s; this session was opened %s",
        owner.grant.empty() ? "outside any grant" : "within grant " + owner.grant,
        caller.grant.empty() ? "outside any grant" : "within grant " + caller.grant));
  }
  if (entry->second.unredeemed > 0) --entry->second.unredeemed;
  return ExportedSegment{.segment = std::move(segment), .core = entry->second.core};
}

bool SegmentExports::InUseElsewhere(uint64_t segment_id, long caller_references) const {
  absl::MutexLock lock(&mutex_);
  auto known = handle_of_segment_.find(segment_id);
  if (known == handle_of_segment_.end()) return false;
  const Entry& entry = by_handle_.find(known->second)->second;
  const SegmentRef segment = entry.segment.lock();
  if (segment == nullptr) return false;
  // `segment` itself is one more reference.
  return entry.unredeemed > 0 || segment.use_count() > caller_references + 1;
}

size_t SegmentExports::size() const {
  absl::MutexLock lock(&mutex_);
  return by_handle_.size();
}

void SegmentExports::PruneExpired() {
  for (auto it = by_handle_.begin(); it != by_handle_.end();) {
    if (it->second.segment.expired()) {
      handle_of_segment_.erase(it->second.segment_id);
      it = by_handle_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace neuron::rtd::memory

// A session's memory: device segments (against its caps, its HBM quota and
// its grant's), and registered host memory.
#include <algorithm>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_format.h"
#include "daemon/session/session.h"
#include "neuron/rtd/abi/data_plane.h"

namespace neuron::rtd::session {

absl::StatusOr<memory::SegmentRef> Session::AllocateSegment(uint32_t core, uint64_t size) {
  if (absl::Status status = CheckOpen(); !status.ok()) return status;
  if (absl::Status status = CheckCore(core); !status.ok()) return status;
  absl::StatusOr<hal::Device*> device = scheduler_.DeviceOfCore(core);
  if (!device.ok()) return device.status();
  if (absl::Status status = memory_caps_.Reserve(core, size); !status.ok()) return status;
  absl::Cleanup uncap = [&] { memory_caps_.Release(core, size); };
  if (grant_ != nullptr) {
    if (absl::Status status = grant_->ReserveHbm(size); !status.ok()) return status;
  }
  absl::Cleanup unquota = [&] {
    if (grant_ != nullptr) grant_->ReleaseHbm(size);
  };
  if (limits_.max_hbm_bytes != 0) {
    // Reserved before allocating, so that concurrent allocations cannot
    // together exceed the quota.
    absl::MutexLock lock(&mutex_);
    const uint64_t in_use = segments_.bytes() - imported_bytes_ + hbm_reserved_;
    if (size > limits_.max_hbm_bytes - std::min(limits_.max_hbm_bytes, in_use)) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "session %d's HBM quota: requested %d bytes, %d of %d bytes in use", id_, size,
          in_use, limits_.max_hbm_bytes));
    }
    hbm_reserved_ += size;
  }
  absl::Cleanup unreserve = [&] {
    if (limits_.max_hbm_bytes == 0) return;
    absl::MutexLock lock(&mutex_);
    hbm_reserved_ -= size;
  };
  absl::StatusOr<memory::SegmentRef> segment = memory_.Allocate(
      (*device)->info().index, core - (*device)->info().first_core_index, size);
  if (!segment.ok()) return segment.status();
  {
    absl::MutexLock lock(&mutex_);
    segments_.Insert(*segment);
    segment_cores_[(*segment)->id()] = {core, size};
    hbm_reserved_ -= limits_.max_hbm_bytes == 0 ? 0 : size;
  }
  std::move(unreserve).Cancel();
  std::move(uncap).Cancel();
  std::move(unquota).Cancel();
  if (closed()) {
    segments_.TakeAll();
    ForgetSegments();
  }
  return segment;
}

absl::Status Session::FreeSegment(uint64_t segment_id) {
  if (absl::Status status = CheckOpen(); !status.ok()) return status;
  {
    absl::MutexLock lock(&mutex_);
    if (auto holds = extra_holds_.find(segment_id); holds != extra_holds_.end()) {
      if (--holds->second == 0) extra_holds_.erase(holds);
      return absl::OkStatus();
    }
  }
  absl::StatusOr<memory::SegmentRef> removed = segments_.Remove(segment_id);
  if (!removed.ok()) return removed.status();
  absl::MutexLock lock(&mutex_);
  if (auto it = segment_cores_.find(segment_id); it != segment_cores_.end()) {
    memory_caps_.Release(it->second.first, it->second.second);
    if (grant_ != nullptr) grant_->ReleaseHbm(it->second.second);
    segment_cores_.erase(it);
  }
  if (imported_cores_.erase(segment_id) != 0) imported_bytes_ -= (*removed)->range().size;
  return absl::OkStatus();
}

std::map<uint32_t, uint64_t> Session::HbmBytesByCore() const {
  absl::MutexLock lock(&mutex_);
  std::map<uint32_t, uint64_t> bytes;
  for (const auto& [segment, core_and_bytes] : segment_cores_) {
    bytes[core_and_bytes.first] += core_and_bytes.second;
  }
  return bytes;
}

absl::StatusOr<memory::ExportedSegment> Session::FindSegmentToShare(uint64_t segment_id) const {
  if (absl::Status status = CheckOpen(); !status.ok()) return status;
  absl::StatusOr<memory::SegmentRef> segment = segments_.Find(segment_id);
  if (!segment.ok()) return segment.status();
  absl::MutexLock lock(&mutex_);
  if (auto owned = segment_cores_.find(segment_id); owned != segment_cores_.end()) {
    return memory::ExportedSegment{.segment = *std::move(segment), .core = owned->second.first};
  }
  if (auto imported = imported_cores_.find(segment_id); imported != imported_cores_.end()) {
    return memory::ExportedSegment{.segment = *std::move(segment), .core = imported->second};
  }
  return absl::NotFoundError(absl::StrFormat("no segment %d in session %d", segment_id, id_));
}

absl::Status Session::ImportSegment(const memory::ExportedSegment& shared) {
  if (absl::Status status = CheckOpen(); !status.ok()) return status;
  const bool on_our_device = std::any_of(cores_.begin(), cores_.end(), [&](uint32_t core) {
    absl::StatusOr<hal::Device*> device = scheduler_.DeviceOfCore(core);
    return device.ok() && (*device)->info().index == shared.segment->device_index();
  });
  if (!on_our_device) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the shared segment is in the HBM of core %d, on a device none of session %d's cores "
        "is on",
        shared.core, id_));
  }
  const uint64_t segment_id = shared.segment->id();
  absl::MutexLock lock(&mutex_);
  if (segments_.Find(segment_id).ok()) {
    ++extra_holds_[segment_id];
    return absl::OkStatus();
  }
  segments_.Insert(shared.segment);
  imported_cores_[segment_id] = shared.core;
  imported_bytes_ += shared.segment->range().size;
  if (closed()) {
    // Close has emptied the table already, or will not see this segment.
    segments_.TakeAll();
    return CheckOpen();
  }
  return absl::OkStatus();
}

absl::Status Session::SetMemoryCap(uint32_t core, std::optional<uint64_t> cap_bytes) {
  if (absl::Status status = CheckOpen(); !status.ok()) return status;
  if (absl::Status status = CheckCore(core); !status.ok()) return status;
  memory_caps_.Set(core, cap_bytes);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<memory::SharedRegion>> Session::RegisterHostMemory(uint64_t size) {
  if (absl::Status status = CheckOpen(); !status.ok()) return status;
  uint64_t id;
  {
    absl::MutexLock lock(&mutex_);
    if (size == 0 || size > limits_.max_host_memory_bytes - host_memory_bytes_) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "session %d's pinned host memory quota: requested %d bytes, %d of %d bytes in use", id_,
          size, host_memory_bytes_, limits_.max_host_memory_bytes));
    }
    host_memory_bytes_ += size;
    id = next_id_++;
  }
  absl::StatusOr<std::unique_ptr<memory::SharedRegion>> region = memory::SharedRegion::Create(
      id, NEURON_RTD_REGION_HOST_MEMORY, size,
      absl::StrFormat("neuron-rtd-pinned-%d-%d", id_, id));
  absl::Status sent = region.ok() ? SendRegion(**region, -1) : region.status();
  absl::MutexLock lock(&mutex_);
  if (!sent.ok() || closed()) {
    // Close has emptied host_memory_ (and zeroed the count) already.
    if (!closed()) host_memory_bytes_ -= size;
    return sent.ok() ? CheckOpen() : sent;
  }
  std::shared_ptr<memory::SharedRegion> shared = *std::move(region);
  host_memory_.emplace(id, shared);
  return shared;
}

absl::Status Session::UnregisterHostMemory(uint64_t host_memory_id) {
  absl::MutexLock lock(&mutex_);
  auto it = host_memory_.find(host_memory_id);
  if (it == host_memory_.end()) {
    return absl::NotFoundError(
        absl::StrFormat("session %d has no host memory %d", id_, host_memory_id));
  }
  host_memory_bytes_ -= it->second->size();
  host_memory_.erase(it);
  return absl::OkStatus();
}

void Session::ForgetSegments() {
  absl::MutexLock lock(&mutex_);
  for (const auto& [segment, core_and_bytes] : segment_cores_) {
    if (grant_ != nullptr) grant_->ReleaseHbm(core_and_bytes.second);
  }
  segment_cores_.clear();
  imported_cores_.clear();
  imported_bytes_ = 0;
  extra_holds_.clear();
}

}  // namespace neuron::rtd::session

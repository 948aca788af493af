#include "daemon/memory/segment.h"

#include "absl/strings/str_format.h"
#include "spdlog/spdlog.h"

namespace neuron::rtd::memory {

Segment::~Segment() {
  if (absl::Status status = allocator_.Free(range_); !status.ok()) {
    spdlog::error("segment {}: {}", id_, std::string(status.message()));
  }
}

void SegmentTable::Insert(SegmentRef segment) {
  absl::MutexLock lock(&mutex_);
  bytes_ += segment->range().size;
  by_address_.emplace(segment->range().address, std::move(segment));
}

absl::StatusOr<SegmentRef> SegmentTable::Remove(uint64_t segment_id) {
  absl::MutexLock lock(&mutex_);
  for (auto it = by_address_.begin(); it != by_address_.end(); ++it) {
    if (it->second->id() == segment_id) {
      SegmentRef segment = std::move(it->second);
      by_address_.erase(it);
      bytes_ -= segment->range().size;
      return segment;
    }
  }
  return absl::NotFoundError(absl::StrFormat("no segment %d in this session", segment_id));
}

absl::StatusOr<SegmentRef> SegmentTable::Find(uint64_t segment_id) const {
  absl::MutexLock lock(&mutex_);
  for (const auto& [address, segment] : by_address_) {
    if (segment->id() == segment_id) return segment;
  }
  return absl::NotFoundError(absl::StrFormat("no segment %d in this session", segment_id));
}

absl::StatusOr<SegmentRef> SegmentTable::Resolve(uint64_t address, uint64_t length) const {
  absl::MutexLock lock(&mutex_);
  auto it = by_address_.upper_bound(address);
  if (it != by_address_.begin()) {
    const SegmentRef& segment = std::prev(it)->second;
    const hal::DeviceRange& range = segment->range();
    if (address >= range.address && address - range.address < range.size) {
      if (length <= range.end() - address) return segment;
      return absl::InvalidArgumentError(absl::StrFormat(
          "device range [0x%x, +%d) runs %d bytes past the end of segment %d [0x%x, +%d)",
          address, length, length - (range.end() - address), segment->id(), range.address,
          range.size));
    }
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "device address 0x%x is not inside any segment of this session", address));
}

uint64_t SegmentTable::bytes() const {
  absl::MutexLock lock(&mutex_);
  return bytes_;
}

size_t SegmentTable::size() const {
  absl::MutexLock lock(&mutex_);
  return by_address_.size();
}

std::vector<SegmentRef> SegmentTable::TakeAll() {
  absl::MutexLock lock(&mutex_);
  std::vector<SegmentRef> all;
  for (auto& [address, segment] : by_address_) all.push_back(std::move(segment));
  by_address_.clear();
  bytes_ = 0;
  return all;
}

}  // namespace neuron::rtd::memory

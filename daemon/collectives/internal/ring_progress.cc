#include "daemon/collectives/internal/ring_progress.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace neuron::rtd::collectives::internal {

RingProgress::RingProgress(std::vector<std::pair<uint64_t, uint64_t>> segments,
                           uint64_t piece_bytes)
    : segments_(std::move(segments)), piece_bytes_(piece_bytes) {
  absl::MutexLock lock(&mutex_);
  for (uint32_t step = 0; step < segments_.size(); ++step) {
    arrived_.emplace_back(pieces(step), 0);
  }
}

uint64_t RingProgress::pieces(uint32_t step) const {
  const uint64_t bytes = segments_[step].second - segments_[step].first;
  return (bytes + piece_bytes_ - 1) / piece_bytes_;
}

std::pair<uint64_t, uint64_t> RingProgress::Piece(uint32_t step, uint64_t piece) const {
  const uint64_t begin = segments_[step].first + piece * piece_bytes_;
  return {begin, std::min(begin + piece_bytes_, segments_[step].second)};
}

absl::Status RingProgress::Arrived(uint32_t step, uint64_t offset, uint64_t bytes) {
  absl::MutexLock lock(&mutex_);
  const uint64_t end = offset + bytes;
  for (uint64_t piece = (offset - segments_[step].first) / piece_bytes_;
       piece < arrived_[step].size(); ++piece) {
    const auto [begin, piece_end] = Piece(step, piece);
    if (begin >= end) break;
    const uint64_t overlap = std::min(end, piece_end) - std::max(offset, begin);
    if (overlap > piece_end - begin - arrived_[step][piece]) {
      return absl::InvalidArgumentError(
          absl::StrFormat("bytes %d-%d arrived twice", begin, piece_end));
    }
    arrived_[step][piece] += overlap;
  }
  return absl::OkStatus();
}

absl::Status RingProgress::WaitForPiece(uint32_t step, uint64_t piece, absl::Time deadline) {
  const auto [begin, end] = Piece(step, piece);
  const uint64_t length = end - begin;
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return !failed_.ok() || arrived_[step][piece] == length;
  };
  absl::MutexLock lock(&mutex_);
  if (!mutex_.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
    return absl::DeadlineExceededError("a piece of the ring did not arrive in time");
  }
  return failed_;
}

void RingProgress::Fail(absl::Status status) {
  absl::MutexLock lock(&mutex_);
  if (failed_.ok()) failed_ = std::move(status);
}

}  // namespace neuron::rtd::collectives::internal

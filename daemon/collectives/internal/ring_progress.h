// Which pieces of each ring step's incoming segment have arrived (reduced
// or copied into place), so that the next step forwards each piece as soon
// as it is ready rather than after its whole segment: the ring's pipeline.
//
// Thread-safety: every method may be called from any thread (the progress
// thread marks arrivals, the exchange thread waits).
#ifndef NEURON_RTD_DAEMON_COLLECTIVES_INTERNAL_RING_PROGRESS_H_
#define NEURON_RTD_DAEMON_COLLECTIVES_INTERNAL_RING_PROGRESS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace neuron::rtd::collectives::internal {

class RingProgress {
 public:
  // Step s receives the bytes [segments[s].first, segments[s].second),
  // cut into pieces of `piece_bytes` (> 0) from its beginning.
  RingProgress(std::vector<std::pair<uint64_t, uint64_t>> segments, uint64_t piece_bytes);

  uint64_t pieces(uint32_t step) const;
  // Bytes [first, second) of piece `piece` of step `step`.
  std::pair<uint64_t, uint64_t> Piece(uint32_t step, uint64_t piece) const;

  // Counts [offset, offset + bytes), which lies within step `step`'s
  // segment, as arrived. INVALID_ARGUMENT when a piece would count more
  // bytes than it holds (bytes sent twice).
  absl::Status Arrived(uint32_t step, uint64_t offset, uint64_t bytes);
  // Waits until every byte of the piece has arrived (OK), `Fail` was called
  // (its status) or the deadline passes (DEADLINE_EXCEEDED).
  absl::Status WaitForPiece(uint32_t step, uint64_t piece, absl::Time deadline);
  // Wakes every waiter with `status` (not OK); later waits return it too.
  void Fail(absl::Status status);

 private:
  const std::vector<std::pair<uint64_t, uint64_t>> segments_;
  const uint64_t piece_bytes_;
  mutable absl::Mutex mutex_;
  // By step, bytes arrived of each piece.
  std::vector<std::vector<uint64_t>> arrived_ ABSL_GUARDED_BY(mutex_);
  absl::Status failed_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace neuron::rtd::collectives::internal

#endif  // NEURON_RTD_DAEMON_COLLECTIVES_INTERNAL_RING_PROGRESS_H_

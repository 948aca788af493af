// The state of one session shared by its streams, buffers and events.
#ifndef NEURONRT_SRC_INTERNAL_SESSION_CORE_H_
#define NEURONRT_SRC_INTERNAL_SESSION_CORE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "neuron/rtd/abi/command_ring.h"
#include "neuronrt/session.h"
#include "src/internal/data_plane_connection.h"
#include "src/internal/grpc_client.h"
#include "src/internal/profile_collector.h"

namespace neuronrt::internal {

// A piece of the staging arena, in use until `done` completes.
struct StagingChunk {
  uint64_t offset = 0;
  uint64_t size = 0;
  char* data = nullptr;
};

// Thread-safety: every method may be called from any thread.
class SessionCore : public std::enable_shared_from_this<SessionCore> {
 public:
  static absl::StatusOr<std::shared_ptr<SessionCore>> Open(const SessionOptions& options);
  ~SessionCore();

  uint64_t id() const { return id_; }
  const std::vector<uint32_t>& cores() const { return cores_; }
  GrpcClient& client() const { return *client_; }
  DataPlaneConnection& data_plane() const { return *data_plane_; }
  uint64_t ring_bytes() const { return ring_bytes_; }

  neuron_rtd_completion_slot* slot(uint32_t index) const;
  bool closed_by_daemon() const;
  // OK while the session is usable; ABORTED once the daemon closed it,
  // UNAVAILABLE once the daemon is gone.
  absl::Status CheckAlive() const;
  // What a failed call made for this session reports: when the daemon has
  // closed the session or gone, that (a device failure, with
  // kStreamFaultPayload), followed by the call's own error in parentheses;
  // otherwise `status`.
  absl::Status SessionError(absl::Status status) const;
  // The full error of the command that poisoned a stream, fetched from the
  // daemon; carries kStreamFaultPayload.
  absl::Status CommandError(uint64_t stream_id, uint64_t sequence, int32_t nrt_status) const;
  // The operator errors of a stream that the daemon still holds, oldest
  // first (empty when it cannot be asked).
  std::vector<v1::ErrorDetail> OperatorErrors(uint64_t stream_id) const;

  // Up to `size` bytes of staging (at least one byte), waiting for earlier
  // chunks' events when the arena is full. Release with ReleaseStaging once
  // its command is enqueued, with that command's event.
  absl::StatusOr<StagingChunk> AcquireStaging(uint64_t size);
  // The same without waiting: nullopt when the arena has no room now. A
  // caller that holds unreleased chunks must use this, or it could wait for
  // itself.
  std::optional<StagingChunk> TryAcquireStaging(uint64_t size);
  void ReleaseStaging(const StagingChunk& chunk, Event done);
  // Whether a command of stream `stream_id` still holds a staging chunk.
  bool HoldsStaging(uint64_t stream_id);
  uint64_t staging_chunk_limit() const { return staging_->size() / 4; }

  absl::Status MarkClosed();

  ProfileCollector& profile() { return profile_; }

 private:
  SessionCore() = default;

  // The command that reads or writes a chunk is (stream, value). The stream
  // is held weakly, so that the session and its streams hold no cycle: a
  // stream that goes away first waits for its staged commands
  // (~StreamState).
  struct StagingEntry {
    uint64_t offset;
    uint64_t size;
    std::weak_ptr<StreamState> stream;
    uint64_t stream_id;
    uint64_t value;
    bool released;
  };
  // Its command has finished, or will never run (its stream failed, or is
  // gone after waiting for it).
  static bool StagingDone(const StagingEntry& entry);

  uint64_t id_ = 0;
  std::vector<uint32_t> cores_;
  uint64_t ring_bytes_ = 0;
  std::unique_ptr<GrpcClient> client_;
  std::unique_ptr<DataPlaneConnection> data_plane_;
  std::unique_ptr<MappedRegion> completion_page_;
  std::unique_ptr<MappedRegion> staging_;
  std::atomic<bool> closed_{false};
  ProfileCollector profile_;

  // A chunk of `size` bytes where the arena has room now.
  std::optional<StagingChunk> TakeFreeChunk(uint64_t size)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(staging_mutex_);

  absl::Mutex staging_mutex_;
  absl::CondVar staging_released_;
  std::deque<StagingEntry> staging_entries_ ABSL_GUARDED_BY(staging_mutex_);
  uint64_t staging_next_ ABSL_GUARDED_BY(staging_mutex_) = 0;
};

// Waits on a stream's timeline, through its completion slot.
class StreamState : public std::enable_shared_from_this<StreamState> {
 public:
  StreamState(std::shared_ptr<SessionCore> session, uint64_t id, uint32_t core,
              std::unique_ptr<MappedRegion> ring, int doorbell_fd, uint32_t slot);
  ~StreamState();

  uint64_t id() const { return id_; }
  uint32_t core() const { return core_; }
  SessionCore& session() const { return *session_; }

  // Writes one record and returns its sequence. While the session profiles
  // this stream's core the record carries the PROFILE flag and the thread's
  // correlation id; a nonzero `timing_correlation` profiles it always, with
  // that id.
  absl::StatusOr<uint64_t> Submit(uint16_t opcode, std::span<const uint8_t> payload,
                                  std::string_view op_name, uint64_t timing_correlation = 0);
  uint64_t last_submitted() const;

  absl::StatusOr<bool> IsComplete(uint64_t value) const;
  // Whether the command at `value` has finished or will never run (the
  // stream or session failed); reports nothing.
  bool Finished(uint64_t value) const;
  absl::Status WaitFor(uint64_t value) const;
  // Waits until Finished(value); reports nothing (errors stay for the next
  // synchronization).
  void WaitSettled(uint64_t value) const;

 private:
  absl::Status Wait(uint64_t value, bool report) const;
  // The error that makes `value` unreachable, or OK.
  absl::Status FailureAt(uint64_t value) const;
  // The first operator error at or before `value` not reported yet, or OK;
  // each is reported once.
  absl::Status TakeOperatorError(uint64_t value) const;
  absl::Status WaitForSpace(uint64_t needed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Publishes tail_ to the daemon and rings the doorbell if it sleeps.
  absl::Status PublishTail() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const std::shared_ptr<SessionCore> session_;
  const uint64_t id_;
  const uint32_t core_;
  const std::unique_ptr<MappedRegion> ring_;
  neuron_rtd_ring_header* const header_;
  char* const records_;
  const uint64_t capacity_;
  const int doorbell_fd_;
  neuron_rtd_completion_slot* const slot_;

  mutable absl::Mutex mutex_;
  uint64_t tail_ ABSL_GUARDED_BY(mutex_) = 0;
  std::atomic<uint64_t> last_submitted_{0};

  // Operator errors the daemon counted that this client has dealt with.
  mutable std::atomic<uint64_t> operator_errors_seen_{0};
  mutable absl::Mutex report_mutex_;
  // Errors of commands up to here have been reported.
  mutable uint64_t reported_through_ ABSL_GUARDED_BY(report_mutex_) = 0;
};

}  // namespace neuronrt::internal

#endif  // NEURONRT_SRC_INTERNAL_SESSION_CORE_H_

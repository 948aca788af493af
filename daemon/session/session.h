// A session: one client process's use of the daemon. It owns segments,
// streams, pinned host memory and shared regions, and ends with its client.
#ifndef NEURON_RTD_DAEMON_SESSION_SESSION_H_
#define NEURON_RTD_DAEMON_SESSION_SESSION_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/common/decaying_sum.h"
#include "daemon/common/peer_credentials.h"
#include "daemon/exec/executable_cache.h"
#include "daemon/memory/memory_manager.h"
#include "daemon/memory/segment.h"
#include "daemon/memory/segment_exports.h"
#include "daemon/queue/execution_context.h"
#include "daemon/queue/scheduler.h"
#include "daemon/queue/stream.h"
#include "daemon/session/grant.h"
#include "daemon/session/memory_caps.h"
#include "daemon/session/profile_buffer.h"
#include "daemon/memory/shared_region.h"

namespace neuron::rtd::session {

struct SessionLimits {
  uint64_t max_hbm_bytes = 0;  // 0: only the devices' size limits
  uint32_t max_streams = 64;
  uint64_t max_ring_bytes = 4ull << 20;
  uint64_t staging_bytes = 64ull << 20;
  uint64_t max_host_memory_bytes = 16ull << 30;
  // The session's weight in its cores' fair queues until changed.
  uint32_t share_weight = 1;
};

// Profiled commands (and runtime spans) a session holds undrained: about
// 25 MiB at most.
inline constexpr size_t kProfileCapacity = 131072;

// The window of SessionStats::recent_share.
inline constexpr absl::Duration kShareWindow = absl::Seconds(5);

// A ring handed to the client: its region and its doorbell.
struct StreamRegion {
  std::shared_ptr<queue::Stream> stream;
  uint32_t completion_slot = 0;
};

struct SessionStats {
  uint64_t hbm_bytes = 0;
  uint32_t streams = 0;
  uint64_t commands_completed = 0;
  uint64_t commands_failed = 0;
  // Device time its commands took on its cores, and the fraction of one
  // core's time they took over about the last kShareWindow.
  uint64_t device_time_ns = 0;
  double recent_share = 0;
  uint32_t share_weight = 1;
  // Commands in its streams' rings not yet taken by their queues.
  uint64_t queued_commands = 0;
  uint64_t host_memory_bytes = 0;
  uint32_t executables = 0;
};

// Thread-safety: every method may be called from any thread; RPC handlers
// and queue threads use a session at once.
// Lifetime: shared by the session manager, its streams' queues (weakly) and
// in-flight RPCs; Close releases everything it holds at once.
class Session final : public queue::ExecutionContext,
                      public std::enable_shared_from_this<Session> {
 public:
  // `grant`: the grant it was opened through (its HBM is charged to it), or
  // null.
  Session(uint64_t id, const PeerCredentials& owner, std::string client_name,
          std::vector<uint32_t> cores, const SessionLimits& limits,
          std::unique_ptr<memory::SharedRegion> completion_page, std::unique_ptr<memory::SharedRegion> staging,
          queue::Scheduler& scheduler, memory::MemoryManager& memory,
          std::shared_ptr<Grant> grant = nullptr);
  ~Session() override;

  uint64_t id() const { return id_; }
  // The grant it was opened through, or null.
  const std::shared_ptr<Grant>& grant() const { return grant_; }
  const PeerCredentials& owner() const { return owner_; }
  const std::string& client_name() const { return client_name_; }
  const std::vector<uint32_t>& cores() const { return cores_; }
  const SessionLimits& limits() const { return limits_; }
  absl::Time opened_at() const { return opened_at_; }
  const memory::SharedRegion& completion_page() const { return *completion_page_; }
  const memory::SharedRegion& staging() const { return *staging_; }
  SessionStats stats() const;

  // Binds the client's data-plane connection (the session takes `fd`) and
  // sends it the completion page and the staging arena.
  absl::Status Attach(int fd);
  bool attached() const;

  absl::StatusOr<memory::SegmentRef> AllocateSegment(uint32_t core, uint64_t size);
  // Frees one hold of the segment: the segment leaves the session with the
  // last (its allocation, and each ImportSegment of it, is one).
  absl::Status FreeSegment(uint64_t segment_id);
  // The HBM the session's own segments hold, by host-wide core.
  std::map<uint32_t, uint64_t> HbmBytesByCore() const;
  // A segment of the session's to share, with the core whose HBM holds it.
  absl::StatusOr<memory::ExportedSegment> FindSegmentToShare(uint64_t segment_id) const;
  // Makes another session's segment one of this session's (one more hold
  // when it is already). Its HBM stays charged to its owner: it counts
  // against none of this session's caps and quotas. FAILED_PRECONDITION
  // when its core's device is not among the session's.
  absl::Status ImportSegment(const memory::ExportedSegment& shared);
  // Caps what the session may hold in segments of `core` (nullopt: no cap); see
  // MemoryCaps.
  absl::Status SetMemoryCap(uint32_t core, std::optional<uint64_t> cap_bytes);
  // Creates a stream on `core` whose ring holds `ring_bytes` (rounded up to a
  // power of two), sends its ring to the client and starts serving it.
  // `priority` is clamped to the core's range of stream priorities.
  absl::StatusOr<StreamRegion> CreateStream(uint32_t core, uint64_t ring_bytes,
                                            int32_t priority = 0);
  // Commands already submitted still run; the stream goes once they have.
  absl::Status DestroyStream(uint64_t stream_id);
  absl::StatusOr<std::shared_ptr<memory::SharedRegion>> RegisterHostMemory(uint64_t size);
  absl::Status UnregisterHostMemory(uint64_t host_memory_id);
  std::vector<queue::StreamError> StreamErrors(uint64_t stream_id) const;
  // Lets the session launch `hold`'s executable until UnloadExecutable or
  // Close. A second hold of one executable is released at once.
  // FAILED_PRECONDITION when the session is closed (the hold is released).
  absl::Status AddExecutable(exec::ExecutableHold hold);
  // Releases the session's hold: LAUNCH records of that id fail the stream
  // from then on (commands already running finish). NOT_FOUND when the
  // session holds no such executable.
  absl::Status UnloadExecutable(uint64_t executable_id);

  // Collectives. The session's ranks of communicators, by handle; a
  // COLLECTIVE record names one. RESOURCE_EXHAUSTED past
  // kMaxCommunicatorsPerSession, FAILED_PRECONDITION when closed (the rank
  // leaves at once).
  absl::StatusOr<uint64_t> AddCommunicator(queue::CommunicatorMembership membership);
  // The rank leaves its communicator: what its peers wait on with it fails.
  absl::Status DestroyCommunicator(uint64_t handle);
  // A description of the session for its peers' errors.
  std::string Description() const;

  // Ends the session: fails its timelines with `nrt_status` (sticky), stops
  // its streams and frees its memory. Idempotent: true for the call that
  // ended it, false once it was closed.
  bool Close(int32_t nrt_status, const std::string& reason);
  bool closed() const { return closed_.load(std::memory_order_acquire); }

  // 1 to kMaxShareWeight (config.h).
  void set_share_weight(uint32_t weight) { share_weight_.store(weight, std::memory_order_relaxed); }

  // queue::ExecutionContext
  uint64_t session_id() const override { return id_; }
  uint32_t share_weight() const override {
    return share_weight_.load(std::memory_order_relaxed);
  }
  void AddDeviceTime(uint64_t ns) override;
  absl::StatusOr<queue::DeviceSpan> ResolveDevice(uint64_t address, uint64_t length) override;
  absl::StatusOr<queue::HostSpan> ResolveStaging(uint64_t offset, uint64_t length) override;
  absl::StatusOr<queue::HostSpan> ResolveHostMemory(uint64_t host_memory_id, uint64_t offset,
                                                    uint64_t length) override;
  std::shared_ptr<queue::Stream> FindStream(uint64_t stream_id) override;
  void OnStreamRetired(uint64_t stream_id, const queue::RetiredTimeline& timeline) override;
  std::optional<queue::RetiredTimeline> FindRetiredTimeline(uint64_t stream_id) override;
  std::shared_ptr<const exec::Executable> FindExecutable(uint64_t executable_id) override;
  absl::StatusOr<queue::CommunicatorMembership> FindCommunicator(uint64_t handle) override;
  void OnCommandDone(const queue::Stream& stream, bool failed) override;
  void OnStreamError(const queue::StreamError& error) override;
  void OnProfiledCommand(queue::ProfiledCommand command) override {
    profile_.Add(std::move(command));
  }

  ProfileBuffer& profile() { return profile_; }

 private:
  // A closed session holds nothing: its segments leave the grant's quota,
  // and its records of imports and holds go.
  void ForgetSegments();

  absl::Status CheckOpen() const;
  absl::Status CheckCore(uint32_t core) const;
  absl::Status SendRegion(const memory::SharedRegion& region, int extra_fd);

  const uint64_t id_;
  const PeerCredentials owner_;
  const std::string client_name_;
  const std::vector<uint32_t> cores_;
  const SessionLimits limits_;
  const absl::Time opened_at_;
  const std::shared_ptr<memory::SharedRegion> completion_page_;
  const std::shared_ptr<memory::SharedRegion> staging_;
  queue::Scheduler& scheduler_;
  memory::MemoryManager& memory_;
  const std::shared_ptr<Grant> grant_;

  memory::SegmentTable segments_;
  MemoryCaps memory_caps_{id_};
  ProfileBuffer profile_{kProfileCapacity};
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> commands_completed_{0};
  std::atomic<uint64_t> commands_failed_{0};
  std::atomic<uint32_t> share_weight_;
  std::atomic<uint64_t> device_time_ns_{0};
  // Apart from mutex_: taken for every command the queues run.
  mutable absl::Mutex share_mutex_;
  DecayingSum recent_device_time_ ABSL_GUARDED_BY(share_mutex_);

  mutable absl::Mutex mutex_;
  int data_fd_ ABSL_GUARDED_BY(mutex_) = -1;
  uint64_t next_id_ ABSL_GUARDED_BY(mutex_) = 1;
  std::map<uint64_t, std::shared_ptr<queue::Stream>> streams_ ABSL_GUARDED_BY(mutex_);
  // Destroyed streams that their queue still serves: others may wait on them.
  std::map<uint64_t, std::weak_ptr<queue::Stream>> retiring_ ABSL_GUARDED_BY(mutex_);
  // A completion slot is free once its last stream object is gone (a copy on
  // the DMA engine may still publish to it after DestroyStream).
  enum class SlotState : uint8_t { kFree, kReserved, kAssigned };
  std::vector<SlotState> slot_states_ ABSL_GUARDED_BY(mutex_);
  std::vector<std::weak_ptr<queue::Stream>> slot_owners_ ABSL_GUARDED_BY(mutex_);
  std::map<uint64_t, std::shared_ptr<memory::SharedRegion>> host_memory_ ABSL_GUARDED_BY(mutex_);
  uint64_t host_memory_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
  // HBM admitted against the quota and not yet in segments_.
  uint64_t hbm_reserved_ ABSL_GUARDED_BY(mutex_) = 0;
  // The core and size each segment counts against in memory_caps_ (and in
  // the grant's quota).
  std::map<uint64_t, std::pair<uint32_t, uint64_t>> segment_cores_ ABSL_GUARDED_BY(mutex_);
  // Segments of other sessions' this one imported: their cores, and bytes.
  std::map<uint64_t, uint32_t> imported_cores_ ABSL_GUARDED_BY(mutex_);
  uint64_t imported_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
  // Holds beyond the first of a segment, by id (each import of a segment
  // the session holds already).
  std::map<uint64_t, uint64_t> extra_holds_ ABSL_GUARDED_BY(mutex_);
  std::deque<queue::StreamError> errors_ ABSL_GUARDED_BY(mutex_);
  // Apart from mutex_ (a stream may be let go while it is held). At most
  // kMaxRetiredTimelines, the oldest streams forgotten first.
  mutable absl::Mutex retired_mutex_;
  std::map<uint64_t, queue::RetiredTimeline> retired_ ABSL_GUARDED_BY(retired_mutex_);
  // Apart from mutex_: every LAUNCH reads it.
  mutable absl::Mutex executables_mutex_;
  std::map<uint64_t, exec::ExecutableHold> executables_ ABSL_GUARDED_BY(executables_mutex_);
  mutable absl::Mutex communicators_mutex_;
  uint64_t next_communicator_handle_ ABSL_GUARDED_BY(communicators_mutex_) = 1;
  std::map<uint64_t, queue::CommunicatorMembership> communicators_
      ABSL_GUARDED_BY(communicators_mutex_);
};

inline constexpr size_t kMaxCommunicatorsPerSession = 256;

// Bytes of a completion page with room for `slots` streams.
uint64_t CompletionPageBytes(uint32_t slots);

}  // namespace neuron::rtd::session

#endif  // NEURON_RTD_DAEMON_SESSION_SESSION_H_

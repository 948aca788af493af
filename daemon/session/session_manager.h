// Every session of the daemon: opening, attaching the data plane, owner
// checks, and ending them.
#ifndef NEURON_RTD_DAEMON_SESSION_SESSION_MANAGER_H_
#define NEURON_RTD_DAEMON_SESSION_SESSION_MANAGER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/common/peer_credentials.h"
#include "daemon/hal/device.h"
#include "daemon/memory/memory_manager.h"
#include "daemon/queue/scheduler.h"
#include "daemon/session/session.h"
#include "neuron/rtd/abi/data_plane.h"

namespace neuron::rtd::session {

struct SessionConfig {
  SessionLimits limits;
  // A session whose client has not attached its data plane by then is closed.
  absl::Duration attach_timeout = absl::Seconds(10);
  uint32_t max_sessions = 1024;
  uint32_t max_sessions_per_user = 256;
  // Weights of sessions by their user's uid, over limits.share_weight.
  std::map<uint32_t, uint32_t> share_weight_by_uid;
};

struct OpenedSession {
  std::shared_ptr<Session> session;
  std::string attach_token;  // NEURON_RTD_ATTACH_TOKEN_BYTES random bytes
};

// Why a session ended (the reasons of neuron_rtd_sessions_ended_total).
enum class SessionEnd : uint8_t {
  kClosed,          // its client closed it
  kClientDied,      // its data-plane connection ended
  kKilled,          // an administrator ended it
  kDeviceReset,     // a device it used was reset
  kAttachTimeout,   // its client never attached the data plane
  kAttachFailed,    // attaching the data plane failed
  kDaemonStopping,
  kGrantRevoked,    // the grant it was opened through was deleted
};
inline constexpr size_t kSessionEndReasons = 8;
std::string_view SessionEndName(SessionEnd reason);

// Sessions since the manager started.
struct SessionCounts {
  uint64_t opened = 0;
  uint64_t live = 0;
  std::array<uint64_t, kSessionEndReasons> ended{};  // by SessionEnd
};

// Thread-safety: every method may be called from any thread.
// Lifetime: the backend, scheduler and memory outlive the manager; the
// destructor closes every session.
class SessionManager {
 public:
  SessionManager(const SessionConfig& config, const hal::Backend& backend,
                 queue::Scheduler& scheduler, memory::MemoryManager& memory);
  SessionManager(const SessionManager&) = delete;
  SessionManager& operator=(const SessionManager&) = delete;
  ~SessionManager();

  // `cores` empty: every core of the host, or of `grant`. INVALID_ARGUMENT
  // for a core the host does not have; PERMISSION_DENIED for one `grant`
  // (the grant whose socket `peer` called, or null) does not have.
  absl::StatusOr<OpenedSession> Open(const PeerCredentials& peer, std::string client_name,
                                     std::vector<uint32_t> cores,
                                     std::shared_ptr<Grant> grant = nullptr);

  // Binds a data-plane connection to the session its token names and hands
  // the session `fd`. PERMISSION_DENIED for a wrong token or another user.
  absl::StatusOr<std::shared_ptr<Session>> Attach(uint64_t session_id,
                                                  std::span<const uint8_t> token,
                                                  const PeerCredentials& peer, int fd);

  // The session, when `caller` may use it (its owner's user, or root).
  absl::StatusOr<std::shared_ptr<Session>> Get(uint64_t session_id,
                                               const PeerCredentials& caller) const;

  // Ends a session as its owner (`why` kClosed) or an administrator
  // (kKilled) asks.
  absl::Status Close(uint64_t session_id, const PeerCredentials& caller, SessionEnd why,
                     int32_t nrt_status, const std::string& reason);
  // The session's data-plane connection ended: its client is gone.
  void OnDisconnect(uint64_t session_id);

  std::vector<std::shared_ptr<Session>> List() const;
  void CloseAll(const std::string& reason);
  SessionCounts counts() const;

  // While draining, Open refuses new sessions; open ones carry on.
  void SetDraining(bool draining);
  bool draining() const;

  // Closes every session that uses a core of device `device_index`, with
  // NRT_HW_ERROR-style `nrt_status`; returns their ids.
  std::vector<uint64_t> CloseSessionsOnDevice(uint32_t device_index, int32_t nrt_status,
                                              const std::string& reason);
  // Ends every session opened through grant `grant_id`; returns their ids.
  std::vector<uint64_t> CloseSessionsOfGrant(const std::string& grant_id,
                                             const std::string& reason);

 private:
  std::shared_ptr<Session> Take(uint64_t session_id);
  // Closes the session; counted as ended for `why` when this call ended it
  // (a client's CloseSession and its connection ending race to close it).
  void End(Session& session, SessionEnd why, int32_t nrt_status, const std::string& reason);
  void ReapUnattached();

  const SessionConfig config_;
  const hal::Backend& backend_;
  queue::Scheduler& scheduler_;
  memory::MemoryManager& memory_;

  mutable absl::Mutex mutex_;
  struct Entry {
    std::shared_ptr<Session> session;
    std::string token;
  };
  std::map<uint64_t, Entry> sessions_ ABSL_GUARDED_BY(mutex_);
  uint64_t next_id_ ABSL_GUARDED_BY(mutex_) = 1;
  uint64_t opened_ ABSL_GUARDED_BY(mutex_) = 0;
  std::array<std::atomic<uint64_t>, kSessionEndReasons> ended_{};
  // Sessions admitted and not yet in sessions_, in all and per uid.
  size_t opening_ ABSL_GUARDED_BY(mutex_) = 0;
  // By uid and the grant it came through.
  using UserKey = std::pair<uid_t, std::string>;
  std::map<UserKey, size_t> opening_by_user_ ABSL_GUARDED_BY(mutex_);
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  bool draining_ ABSL_GUARDED_BY(mutex_) = false;
  absl::CondVar stop_;
  std::thread reaper_;
};

}  // namespace neuron::rtd::session

#endif  // NEURON_RTD_DAEMON_SESSION_SESSION_MANAGER_H_

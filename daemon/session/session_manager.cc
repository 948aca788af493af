#include "daemon/session/session_manager.h"

#include <unistd.h>

#include <algorithm>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "daemon/common/random_bytes.h"
#include "neuron/rtd/abi/data_plane.h"

namespace neuron::rtd::session {
namespace {

bool TokensEqual(std::string_view expected, std::span<const uint8_t> given) {
  if (expected.size() != given.size()) return false;
  uint8_t difference = 0;
  for (size_t i = 0; i < given.size(); ++i) {
    difference |= static_cast<uint8_t>(expected[i]) ^ given[i];
  }
  return difference == 0;
}

}  // namespace

std::string_view SessionEndName(SessionEnd reason) {
  switch (reason) {
    case SessionEnd::kClosed: return "closed";
    case SessionEnd::kClientDied: return "client_died";
    case SessionEnd::kKilled: return "killed";
    case SessionEnd::kDeviceReset: return "device_reset";
    case SessionEnd::kAttachTimeout: return "attach_timeout";
    case SessionEnd::kAttachFailed: return "attach_failed";
    case SessionEnd::kDaemonStopping: return "daemon_stopping";
    case SessionEnd::kGrantRevoked: return "grant_revoked";
  }
  return "unknown";
}

SessionManager::SessionManager(const SessionConfig& config, const hal::Backend& backend,
                               queue::Scheduler& scheduler, memory::MemoryManager& memory)
    : config_(config), backend_(backend), scheduler_(scheduler), memory_(memory) {
  reaper_ = std::thread([this] { ReapUnattached(); });
}

SessionManager::~SessionManager() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
    stop_.SignalAll();
  }
  reaper_.join();
  CloseAll("daemon stopping");
}

absl::StatusOr<OpenedSession> SessionManager::Open(const PeerCredentials& peer,
                                                   std::string client_name,
                                                   std::vector<uint32_t> cores,
                                                   std::shared_ptr<Grant> grant) {
  const uint32_t host_cores = backend_.total_logical_cores();
  if (cores.empty()) {
    if (grant != nullptr) {
      cores = grant->cores();
    } else {
      for (uint32_t core = 0; core < host_cores; ++core) cores.push_back(core);
    }
  }
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  if (cores.back() >= host_cores) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "core %d does not exist: this host has cores 0-%d", cores.back(), host_cores - 1));
  }
  if (grant != nullptr) {
    for (uint32_t core : cores) {
      if (grant->HasCore(core)) continue;
      return absl::PermissionDeniedError(absl::StrFormat(
          "core %d is not granted: the sessions of grant %s may use cores %s", core, grant->id(),
          absl::StrJoin(grant->cores(), ",")));
    }
  }
  constexpr size_t kMaxClientName = 256;
  if (client_name.size() > kMaxClientName) client_name.resize(kMaxClientName);

  absl::StatusOr<std::string> token = RandomBytes(NEURON_RTD_ATTACH_TOKEN_BYTES, "a session token");
  if (!token.ok()) return token.status();
  uint64_t id;
  {
    absl::MutexLock lock(&mutex_);
    if (stopping_) return absl::UnavailableError("neuron-rtd is stopping");
    if (draining_) {
      return absl::UnavailableError(
          "neuron-rtd is draining for maintenance: it refuses new sessions until an "
          "administrator runs `neuronctl drain --off`");
    }
    // Sessions being opened count too: the check and the insert below are
    // apart, and concurrent opens must not overshoot the limit between them.
    if (sessions_.size() + opening_ >= config_.max_sessions) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("neuron-rtd already serves %d sessions, its limit",
                          sessions_.size() + opening_));
    }
    // A grant's sessions count apart from the same uid's elsewhere: a
    // container's root must not use up the host root's sessions.
    const UserKey user{peer.uid, peer.grant};
    size_t of_user = opening_by_user_[user];
    for (const auto& [existing_id, entry] : sessions_) {
      const PeerCredentials& owner = entry.session->owner();
      of_user += owner.uid == peer.uid && owner.grant == peer.grant ? 1 : 0;
    }
    if (of_user >= config_.max_sessions_per_user) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "uid %d%s already has %d sessions, the per-user limit ([session] "
          "max_sessions_per_user)",
          peer.uid, peer.grant.empty() ? "" : " of grant " + peer.grant, of_user));
    }
    ++opening_;
    ++opening_by_user_[user];
    id = next_id_++;
  }
  absl::Cleanup opened = [this, user = UserKey{peer.uid, peer.grant}] {
    absl::MutexLock lock(&mutex_);
    --opening_;
    if (--opening_by_user_[user] == 0) opening_by_user_.erase(user);
  };
  const uint32_t slots = config_.limits.max_streams;
  absl::StatusOr<std::unique_ptr<memory::SharedRegion>> page =
      memory::SharedRegion::Create(1, NEURON_RTD_REGION_COMPLETION_PAGE,
                           CompletionPageBytes(slots),
                           absl::StrFormat("neuron-rtd-completion-%d", id));
  if (!page.ok()) return page.status();
  absl::StatusOr<std::unique_ptr<memory::SharedRegion>> staging =
      memory::SharedRegion::Create(2, NEURON_RTD_REGION_STAGING, config_.limits.staging_bytes,
                           absl::StrFormat("neuron-rtd-staging-%d", id));
  if (!staging.ok()) return staging.status();
  SessionLimits limits = config_.limits;
  if (auto weight = config_.share_weight_by_uid.find(peer.uid);
      weight != config_.share_weight_by_uid.end()) {
    limits.share_weight = weight->second;
  }
  auto session = std::make_shared<Session>(id, peer, std::move(client_name), std::move(cores),
                                           limits, *std::move(page), *std::move(staging),
                                           scheduler_, memory_, std::move(grant));
  absl::MutexLock lock(&mutex_);
  // A grant deleted while this session was being made: its deleter's sweep
  // of the grant's sessions may have run before the insert below.
  if (session->grant() != nullptr && session->grant()->revoked()) {
    return absl::PermissionDeniedError(
        absl::StrFormat("grant %s was deleted", session->grant()->id()));
  }
  sessions_.emplace(id, Entry{.session = session, .token = *token});
  ++opened_;
  return OpenedSession{.session = std::move(session), .attach_token = *std::move(token)};
}

absl::StatusOr<std::shared_ptr<Session>> SessionManager::Attach(uint64_t session_id,
                                                                std::span<const uint8_t> token,
                                                                const PeerCredentials& peer,
                                                                int fd) {
  std::shared_ptr<Session> session;
  {
    absl::MutexLock lock(&mutex_);
    auto it = sessions_.find(session_id);
    if (it == sessions_.end() || !TokensEqual(it->second.token, token) ||
        !MayActOn(peer, it->second.session->owner())) {
      ::close(fd);
      return absl::PermissionDeniedError(
          absl::StrFormat("no session %d with that attach token for this user", session_id));
    }
    session = it->second.session;
    it->second.token.clear();  // one use only
  }
  if (absl::Status attached = session->Attach(fd); !attached.ok()) {
    End(*session, SessionEnd::kAttachFailed, NEURON_RTD_STATUS_FAILURE,
        std::string(attached.message()));
    Take(session_id);
    return attached;
  }
  return session;
}

absl::StatusOr<std::shared_ptr<Session>> SessionManager::Get(uint64_t session_id,
                                                             const PeerCredentials& caller) const {
  absl::MutexLock lock(&mutex_);
  auto it = sessions_.find(session_id);
  if (it == sessions_.end()) {
    return absl::NotFoundError(absl::StrFormat("no session %d", session_id));
  }
  if (!MayActOn(caller, it->second.session->owner())) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "session %d belongs to uid %d; uid %d may not use it", session_id,
        it->second.session->owner().uid, caller.uid));
  }
  return it->second.session;
}

std::shared_ptr<Session> SessionManager::Take(uint64_t session_id) {
  absl::MutexLock lock(&mutex_);
  auto it = sessions_.find(session_id);
  if (it == sessions_.end()) return nullptr;
  std::shared_ptr<Session> session = std::move(it->second.session);
  sessions_.erase(it);
  return session;
}

void SessionManager::End(Session& session, SessionEnd why, int32_t nrt_status,
                         const std::string& reason) {
  if (session.Close(nrt_status, reason)) {
    ended_[static_cast<size_t>(why)].fetch_add(1, std::memory_order_relaxed);
  }
}

SessionCounts SessionManager::counts() const {
  SessionCounts counts;
  {
    absl::MutexLock lock(&mutex_);
    counts.opened = opened_;
    counts.live = sessions_.size();
  }
  for (size_t i = 0; i < kSessionEndReasons; ++i) {
    counts.ended[i] = ended_[i].load(std::memory_order_relaxed);
  }
  return counts;
}

absl::Status SessionManager::Close(uint64_t session_id, const PeerCredentials& caller,
                                   SessionEnd why, int32_t nrt_status,
                                   const std::string& reason) {
  absl::StatusOr<std::shared_ptr<Session>> session = Get(session_id, caller);
  if (!session.ok()) return session.status();
  // Closed before it leaves the list: a session no longer listed holds nothing.
  End(**session, why, nrt_status, reason);
  Take(session_id);
  return absl::OkStatus();
}

void SessionManager::OnDisconnect(uint64_t session_id) {
  std::shared_ptr<Session> session;
  {
    absl::MutexLock lock(&mutex_);
    auto it = sessions_.find(session_id);
    if (it == sessions_.end()) return;
    session = it->second.session;
  }
  End(*session, SessionEnd::kClientDied, NEURON_RTD_STATUS_CLOSED, "client disconnected");
  Take(session_id);
}

std::vector<std::shared_ptr<Session>> SessionManager::List() const {
  absl::MutexLock lock(&mutex_);
  std::vector<std::shared_ptr<Session>> sessions;
  for (const auto& [id, entry] : sessions_) sessions.push_back(entry.session);
  return sessions;
}

void SessionManager::CloseAll(const std::string& reason) {
  std::map<uint64_t, Entry> sessions;
  {
    absl::MutexLock lock(&mutex_);
    sessions.swap(sessions_);
  }
  for (auto& [id, entry] : sessions) {
    End(*entry.session, SessionEnd::kDaemonStopping, NEURON_RTD_STATUS_CLOSED, reason);
  }
}

void SessionManager::SetDraining(bool draining) {
  absl::MutexLock lock(&mutex_);
  draining_ = draining;
}

bool SessionManager::draining() const {
  absl::MutexLock lock(&mutex_);
  return draining_;
}

std::vector<uint64_t> SessionManager::CloseSessionsOnDevice(uint32_t device_index,
                                                            int32_t nrt_status,
                                                            const std::string& reason) {
  std::vector<std::shared_ptr<Session>> affected;
  for (const std::shared_ptr<Session>& session : List()) {
    for (uint32_t core : session->cores()) {
      absl::StatusOr<hal::Device*> device = scheduler_.DeviceOfCore(core);
      if (device.ok() && (*device)->info().index == device_index) {
        affected.push_back(session);
        break;
      }
    }
  }
  std::vector<uint64_t> ids;
  for (const std::shared_ptr<Session>& session : affected) {
    End(*session, SessionEnd::kDeviceReset, nrt_status, reason);
    Take(session->id());
    ids.push_back(session->id());
  }
  return ids;
}

std::vector<uint64_t> SessionManager::CloseSessionsOfGrant(const std::string& grant_id,
                                                           const std::string& reason) {
  std::vector<uint64_t> ids;
  for (const std::shared_ptr<Session>& session : List()) {
    if (session->grant() == nullptr || session->grant()->id() != grant_id) continue;
    End(*session, SessionEnd::kGrantRevoked, NEURON_RTD_STATUS_CLOSED, reason);
    Take(session->id());
    ids.push_back(session->id());
  }
  return ids;
}

void SessionManager::ReapUnattached() {
  absl::MutexLock lock(&mutex_);
  while (!stopping_) {
    stop_.WaitWithTimeout(&mutex_, config_.attach_timeout / 2);
    const absl::Time deadline = absl::Now() - config_.attach_timeout;
    std::vector<std::shared_ptr<Session>> expired;
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (!it->second.session->attached() && it->second.session->opened_at() < deadline) {
        expired.push_back(std::move(it->second.session));
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
    if (expired.empty()) continue;
    mutex_.Unlock();
    for (auto& session : expired) {
      End(*session, SessionEnd::kAttachTimeout, NEURON_RTD_STATUS_TIMEOUT,
          "its client never attached the data plane");
    }
    mutex_.Lock();
  }
}

}  // namespace neuron::rtd::session

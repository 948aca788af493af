#include "daemon/server/data_plane.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "neuron/rtd/abi/command_ring.h"
#include "neuron/rtd/abi/data_plane.h"
#include "spdlog/spdlog.h"

namespace neuron::rtd {
namespace {

// A connection that has not sent its attach message by then is dropped.
constexpr absl::Duration kAttachDeadline = absl::Seconds(10);
constexpr int kSweepIntervalMs = 1000;

void Reply(int fd, int32_t status, uint64_t session_id) {
  neuron_rtd_attach_reply reply{
      .magic = NEURON_RTD_ATTACH_REPLY_MAGIC, .status = status, .session_id = session_id};
  if (::send(fd, &reply, sizeof(reply), MSG_NOSIGNAL | MSG_DONTWAIT) != sizeof(reply)) {
    spdlog::debug("cannot answer an attach on the data plane: {}", std::strerror(errno));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataPlane>> DataPlane::Create(ListenerOptions options,
                                                             PendingLimits limits,
                                                             session::SessionManager& sessions,
                                                             OsSysCalls& sys_calls) {
  options.socket_type = SOCK_SEQPACKET;
  absl::StatusOr<std::unique_ptr<UnixSocketListener>> listener =
      UnixSocketListener::Create(options, sys_calls);
  if (!listener.ok()) return listener.status();
  return std::unique_ptr<DataPlane>(new DataPlane(*std::move(listener), limits, sessions));
}

DataPlane::DataPlane(std::unique_ptr<UnixSocketListener> listener, PendingLimits limits,
                     session::SessionManager& sessions)
    : listener_(std::move(listener)),
      limits_(limits),
      sessions_(sessions),
      epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)),
      stop_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  epoll_event event{.events = EPOLLIN, .data = {.fd = stop_fd_}};
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd_, &event);
}

DataPlane::~DataPlane() {
  listener_->Stop();
  const uint64_t one = 1;
  if (::write(stop_fd_, &one, sizeof(one)) < 0) {
    spdlog::error("cannot stop the data plane: {}", std::strerror(errno));
  }
  if (thread_.joinable()) thread_.join();
  absl::MutexLock lock(&mutex_);
  for (const auto& [fd, connection] : connections_) ::close(fd);
  connections_.clear();
  ::close(stop_fd_);
  ::close(epoll_fd_);
}

void DataPlane::Start() {
  thread_ = std::thread([this] { Loop(); });
  listener_->Start([this](int fd, const PeerCredentials& peer) { Accept(fd, peer); });
}

void DataPlane::Accept(int fd, const PeerCredentials& peer) {
  {
    absl::MutexLock lock(&mutex_);
    uint32_t pending = 0;
    uint32_t of_user = 0;
    for (const auto& [other_fd, connection] : connections_) {
      if (connection.session_id != 0) continue;
      ++pending;
      of_user += connection.peer.uid == peer.uid ? 1 : 0;
    }
    if (pending >= limits_.total || of_user >= limits_.per_user) {
      spdlog::warn(
          "data plane: refusing a connection from pid {} (uid {}): {} connections wait to attach "
          "({} of them the user's; limits {} and {} per user)",
          peer.pid, peer.uid, pending, of_user, limits_.total, limits_.per_user);
      ::close(fd);
      return;
    }
    connections_[fd] = Connection{.peer = peer, .accepted_at = absl::Now()};
  }
  epoll_event event{.events = EPOLLIN | EPOLLRDHUP, .data = {.fd = fd}};
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
    spdlog::error("cannot watch a data-plane connection: {}", std::strerror(errno));
    Drop(fd);
  }
}

void DataPlane::Loop() {
  epoll_event events[32];
  while (true) {
    const int ready = ::epoll_wait(epoll_fd_, events, 32, kSweepIntervalMs);
    if (ready < 0 && errno != EINTR) {
      spdlog::critical("data plane: epoll_wait: {}", std::strerror(errno));
      return;
    }
    for (int i = 0; i < ready; ++i) {
      if (events[i].data.fd == stop_fd_) return;
      HandleReadable(events[i].data.fd);
    }
    DropStaleUnattached();
  }
}

void DataPlane::HandleReadable(int fd) {
  Connection connection;
  {
    absl::MutexLock lock(&mutex_);
    auto it = connections_.find(fd);
    if (it == connections_.end()) return;
    connection = it->second;
  }
  if (connection.session_id == 0) {
    HandleAttach(fd, connection);
    return;
  }
  char byte;
  const ssize_t got = ::recv(fd, &byte, 1, MSG_DONTWAIT);
  if (got < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (got > 0) {
    spdlog::warn("session {}: unexpected data on its data-plane connection; closing it",
                 connection.session_id);
  }
  // End of the connection, or a protocol violation: either way the client
  // is gone or broken, and its session ends now.
  sessions_.OnDisconnect(connection.session_id);
  Drop(fd);
}

void DataPlane::HandleAttach(int fd, Connection& connection) {
  neuron_rtd_attach_message message{};
  const ssize_t got = ::recv(fd, &message, sizeof(message), MSG_DONTWAIT | MSG_TRUNC);
  if (got < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (got != static_cast<ssize_t>(sizeof(message)) || message.magic != NEURON_RTD_ATTACH_MAGIC) {
    Reply(fd, NEURON_RTD_STATUS_INVALID, 0);
    Drop(fd);
    return;
  }
  if (message.abi_version_major != NEURON_RTD_ABI_VERSION_MAJOR) {
    spdlog::warn("pid {} speaks ring ABI {}.{}, the daemon {}.{}; refused", connection.peer.pid,
                 message.abi_version_major, message.abi_version_minor,
                 NEURON_RTD_ABI_VERSION_MAJOR, NEURON_RTD_ABI_VERSION_MINOR);
    Reply(fd, NEURON_RTD_STATUS_INVALID, message.session_id);
    Drop(fd);
    return;
  }
  const int session_fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  absl::StatusOr<std::shared_ptr<session::Session>> session =
      session_fd < 0 ? absl::ErrnoToStatus(errno, "dup")
                     : sessions_.Attach(message.session_id, message.token, connection.peer,
                                        session_fd);
  if (!session.ok()) {
    spdlog::warn("pid {}: attach to session {} refused: {}", connection.peer.pid,
                 message.session_id, std::string(session.status().message()));
    Reply(fd, NEURON_RTD_STATUS_INVALID_HANDLE, message.session_id);
    Drop(fd);
    return;
  }
  absl::MutexLock lock(&mutex_);
  connections_[fd].session_id = message.session_id;
}

void DataPlane::Drop(int fd) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  absl::MutexLock lock(&mutex_);
  if (connections_.erase(fd) > 0) ::close(fd);
}

void DataPlane::DropStaleUnattached() {
  std::vector<int> stale;
  {
    absl::MutexLock lock(&mutex_);
    const absl::Time deadline = absl::Now() - kAttachDeadline;
    for (const auto& [fd, connection] : connections_) {
      if (connection.session_id == 0 && connection.accepted_at < deadline) stale.push_back(fd);
    }
  }
  for (int fd : stale) Drop(fd);
}

}  // namespace neuron::rtd

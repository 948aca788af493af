#include "src/internal/data_plane_connection.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <cstring>

#include "absl/strings/str_format.h"
#include "neuron/rtd/abi/command_ring.h"
#include "neuron/rtd/abi/data_plane.h"
#include "neuron/rtd/socket_paths.h"
#include "src/internal/daemon_trust.h"

namespace neuronrt::internal {

MappedRegion::~MappedRegion() { ::munmap(data_, size_); }

std::string ResolveDataPlaneAddress(const std::string& answered,
                                    const std::string& grpc_socket_path) {
  if (answered.starts_with(neuron::rtd::kUnixAddressScheme) ||
      answered.find('/') != std::string::npos) {
    return answered;
  }
  return std::string(neuron::rtd::kUnixAddressScheme) +
         grpc_socket_path.substr(0, grpc_socket_path.rfind('/') + 1) + answered;
}

absl::StatusOr<std::unique_ptr<DataPlaneConnection>> DataPlaneConnection::Attach(
    const std::string& address, uint64_t session_id, const std::string& token) {
  const std::string_view scheme = neuron::rtd::kUnixAddressScheme;
  if (!std::string_view(address).starts_with(scheme)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("data-plane address \"%s\" is not unix:PATH", address));
  }
  const std::string path = address.substr(scheme.size());
  sockaddr_un socket_address{};
  socket_address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(socket_address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrFormat("data-plane path %s is too long", path));
  }
  std::memcpy(socket_address.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "socket for the data plane");
  std::unique_ptr<DataPlaneConnection> connection(new DataPlaneConnection(fd));
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&socket_address), sizeof(socket_address)) !=
      0) {
    return absl::UnavailableError(absl::StrFormat("cannot connect to the data plane at %s: %s",
                                                  address, std::strerror(errno)));
  }
  // The attach token and, after it, every tensor go over this connection.
  if (absl::Status peer = CheckDaemonPeer(fd, address); !peer.ok()) return peer;
  neuron_rtd_attach_message attach{.magic = NEURON_RTD_ATTACH_MAGIC,
                                   .abi_version_major = NEURON_RTD_ABI_VERSION_MAJOR,
                                   .abi_version_minor = NEURON_RTD_ABI_VERSION_MINOR,
                                   .session_id = session_id,
                                   .token = {}};
  if (token.size() != sizeof(attach.token)) {
    return absl::InternalError("the daemon sent an attach token of the wrong size");
  }
  std::memcpy(attach.token, token.data(), token.size());
  if (::send(fd, &attach, sizeof(attach), MSG_NOSIGNAL) != sizeof(attach)) {
    return absl::UnavailableError(
        absl::StrFormat("cannot attach to session %d: %s", session_id, std::strerror(errno)));
  }
  return connection;
}

DataPlaneConnection::~DataPlaneConnection() {
  ::close(fd_);
  for (auto& [id, received] : pending_) {
    if (received.extra_fd >= 0) ::close(received.extra_fd);
  }
}

bool DataPlaneConnection::Alive() const {
  pollfd entry{.fd = fd_, .events = POLLRDHUP, .revents = 0};
  if (::poll(&entry, 1, 0) < 0) return true;
  return (entry.revents & (POLLHUP | POLLRDHUP | POLLERR)) == 0;
}

absl::Status DataPlaneConnection::ReadOne(absl::Duration timeout) {
  pollfd entry{.fd = fd_, .events = POLLIN, .revents = 0};
  // A deadline already past is a zero wait: poll takes a negative timeout
  // as "forever".
  const int64_t milliseconds =
      std::clamp<int64_t>(absl::ToInt64Milliseconds(timeout), 0, std::numeric_limits<int>::max());
  const int ready = ::poll(&entry, 1, static_cast<int>(milliseconds));
  if (ready == 0) return absl::DeadlineExceededError("the daemon sent no region in time");
  if (ready < 0) return absl::ErrnoToStatus(errno, "poll on the data plane");

  union {
    neuron_rtd_region_message region;
    neuron_rtd_attach_reply reply;
  } message{};
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  iovec payload{.iov_base = &message, .iov_len = sizeof(message)};
  msghdr header{};
  header.msg_iov = &payload;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = sizeof(control);
  const ssize_t got = ::recvmsg(fd_, &header, MSG_CMSG_CLOEXEC);
  int fds[2] = {-1, -1};
  int fd_count = 0;
  for (cmsghdr* item = CMSG_FIRSTHDR(&header); item != nullptr; item = CMSG_NXTHDR(&header, item)) {
    if (item->cmsg_level == SOL_SOCKET && item->cmsg_type == SCM_RIGHTS) {
      fd_count = static_cast<int>((item->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      std::memcpy(fds, CMSG_DATA(item), std::min(fd_count, 2) * sizeof(int));
    }
  }
  auto close_fds = [&] {
    for (int i = 0; i < std::min(fd_count, 2); ++i) ::close(fds[i]);
  };
  if (got == 0) return absl::UnavailableError("neuron-rtd closed the session's data plane");
  if (got < 0) return absl::ErrnoToStatus(errno, "recvmsg on the data plane");
  if (got == sizeof(neuron_rtd_attach_reply) && message.reply.magic == NEURON_RTD_ATTACH_REPLY_MAGIC) {
    close_fds();
    return absl::PermissionDeniedError(absl::StrFormat(
        "neuron-rtd refused to attach session %d (status %d)", message.reply.session_id,
        message.reply.status));
  }
  if (got != sizeof(neuron_rtd_region_message) || message.region.magic != NEURON_RTD_REGION_MAGIC ||
      fd_count != static_cast<int>(message.region.fd_count) || fd_count < 1 || fd_count > 2) {
    close_fds();
    return absl::InternalError("malformed region message from neuron-rtd");
  }
  void* data = ::mmap(nullptr, message.region.size_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                      fds[0], 0);
  ::close(fds[0]);
  if (data == MAP_FAILED) {
    if (fd_count == 2) ::close(fds[1]);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot map region %d of %d bytes: %s", message.region.region_id,
        message.region.size_bytes, std::strerror(errno)));
  }
  pending_[{message.region.kind, message.region.region_id}] = ReceivedRegion{
      .region = std::make_unique<MappedRegion>(data, message.region.size_bytes,
                                               message.region.kind),
      .extra_fd = fd_count == 2 ? fds[1] : -1};
  return absl::OkStatus();
}

absl::StatusOr<ReceivedRegion> DataPlaneConnection::Receive(uint64_t region_id, uint32_t kind,
                                                            absl::Duration timeout) {
  absl::MutexLock lock(&mutex_);
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    auto it = pending_.find({kind, region_id});
    if (it != pending_.end()) {
      ReceivedRegion received = std::move(it->second);
      pending_.erase(it);
      return received;
    }
    if (absl::Status status = ReadOne(deadline - absl::Now()); !status.ok()) return status;
  }
}

}  // namespace neuronrt::internal

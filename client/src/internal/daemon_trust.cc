#include "src/internal/daemon_trust.h"

#include <pwd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_format.h"
#include "neuron/rtd/socket_paths.h"

namespace neuronrt::internal {

bool TrustedDaemonUid(uid_t uid) {
  if (uid == ::getuid() || uid == 0) return true;
  const std::string name(neuron::rtd::kDaemonUser);
  passwd entry {};
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  return ::getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) == 0 &&
         found != nullptr && found->pw_uid == uid;
}

absl::Status CheckDaemonPeer(int fd, const std::string& target) {
  ucred peer {};
  socklen_t length = sizeof(peer);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrFormat("reading the credentials of %s", target));
  }
  if (!TrustedDaemonUid(peer.uid)) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "refusing neuron-rtd at %s: it is served by uid %d (pid %d), which is neither you (uid "
        "%d), root, nor the %s account; another user may be trying to receive your tensors",
        target, peer.uid, peer.pid, ::getuid(), neuron::rtd::kDaemonUser));
  }
  return absl::OkStatus();
}

absl::Status ProbeDaemonPeer(const std::string& socket_path, const std::string& target) {
  sockaddr_un address {};
  address.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrFormat("socket path %s is too long", socket_path));
  }
  std::memcpy(address.sun_path, socket_path.data(), socket_path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "socket");
  absl::Cleanup closer = [fd] { ::close(fd); };
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return absl::UnavailableError(absl::StrFormat("cannot reach neuron-rtd at %s: %s", target,
                                                  std::strerror(errno)));
  }
  return CheckDaemonPeer(fd, target);
}

}  // namespace neuronrt::internal

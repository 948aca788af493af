#include "daemon/server/peer_credentials.h"

#include <sys/stat.h>

#include <charconv>
#include <vector>

namespace neuron::rtd {

bool PeerRegistry::Admit(int fd, const PeerCredentials& credentials, uint32_t max_per_user) {
  struct stat identity = {};
  if (!sys_calls_.Fstat(fd, &identity).ok()) return false;
  absl::MutexLock lock(&mutex_);
  // A dead entry under this number is not counted: this connection replaces it.
  by_fd_.erase(fd);
  if (ConnectionsOfLocked(credentials.uid, credentials.grant) >= max_per_user) return false;
  by_fd_[fd] = Entry{.credentials = credentials, .device = identity.st_dev,
                     .inode = identity.st_ino};
  return true;
}

uint32_t PeerRegistry::ConnectionsOfLocked(uid_t uid, const std::string& grant) {
  uint32_t live = 0;
  std::vector<int> dead;
  for (const auto& [fd, entry] : by_fd_) {
    if (entry.credentials.uid != uid || entry.credentials.grant != grant) continue;
    struct stat now = {};
    if (sys_calls_.Fstat(fd, &now).ok() && now.st_dev == entry.device &&
        now.st_ino == entry.inode) {
      ++live;
    } else {
      dead.push_back(fd);
    }
  }
  for (int fd : dead) by_fd_.erase(fd);
  return live;
}

uint32_t PeerRegistry::ConnectionsOf(uid_t uid, const std::string& grant) {
  absl::MutexLock lock(&mutex_);
  return ConnectionsOfLocked(uid, grant);
}

std::optional<PeerCredentials> PeerRegistry::Lookup(std::string_view grpc_peer) const {
  constexpr std::string_view kPrefix = "fd:";
  if (!grpc_peer.starts_with(kPrefix)) return std::nullopt;
  const std::string_view number = grpc_peer.substr(kPrefix.size());
  int fd = -1;
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), fd);
  if (error != std::errc() || end != number.data() + number.size()) return std::nullopt;
  absl::MutexLock lock(&mutex_);
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) return std::nullopt;
  return it->second.credentials;
}

}  // namespace neuron::rtd

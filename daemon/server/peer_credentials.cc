#include "daemon/server/peer_credentials.h"

#include <charconv>

namespace neuron::rtd {

void PeerRegistry::Record(int fd, const PeerCredentials& credentials) {
  absl::MutexLock lock(&mutex_);
  by_fd_[fd] = credentials;
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
  return it->second;
}

}  // namespace neuron::rtd

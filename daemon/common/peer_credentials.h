// Who is on the other end of a connection, as the kernel reports it
// (SO_PEERCRED) when the daemon accepts it. Never what the peer claims.
#ifndef NEURON_RTD_DAEMON_COMMON_PEER_CREDENTIALS_H_
#define NEURON_RTD_DAEMON_COMMON_PEER_CREDENTIALS_H_

#include <sys/types.h>

#include <string>

namespace neuron::rtd {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  // The grant whose socket the connection came through; empty for the
  // daemon's own socket.
  std::string grant;
};

// Whether `caller` may act on something that `owner` owns: root, or the
// same user; a peer of a grant's socket only within its grant, whatever its
// uid (a container's root is not the host's administrator).
inline bool MayActOn(const PeerCredentials& caller, const PeerCredentials& owner) {
  if (!caller.grant.empty() && caller.grant != owner.grant) return false;
  return caller.uid == 0 || caller.uid == owner.uid;
}

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_COMMON_PEER_CREDENTIALS_H_

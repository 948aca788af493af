// Whether a client may trust the daemon at a socket: the credentials of
// whoever serves it, checked before the client sends anything (with the
// directory check of neuronrt/address.h, which makes the socket a probe
// reached the one the client then uses).
#ifndef NEURONRT_SRC_INTERNAL_DAEMON_TRUST_H_
#define NEURONRT_SRC_INTERNAL_DAEMON_TRUST_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"

namespace neuronrt::internal {

// The daemon's user: this process's user, root, or the system daemon's
// account (neuron::rtd::kDaemonUser).
bool TrustedDaemonUid(uid_t uid);

// Reads SO_PEERCRED of a connected Unix socket and checks TrustedDaemonUid.
// PERMISSION_DENIED naming the uid and `target` otherwise.
absl::Status CheckDaemonPeer(int fd, const std::string& target);

// Connects to `socket_path`, checks the server with CheckDaemonPeer and
// hangs up. UNAVAILABLE when nothing listens there.
absl::Status ProbeDaemonPeer(const std::string& socket_path, const std::string& target);

}  // namespace neuronrt::internal

#endif  // NEURONRT_SRC_INTERNAL_DAEMON_TRUST_H_

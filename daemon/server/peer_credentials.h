// The peers of the connections the daemon accepted.
#ifndef NEURON_RTD_DAEMON_SERVER_PEER_CREDENTIALS_H_
#define NEURON_RTD_DAEMON_SERVER_PEER_CREDENTIALS_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/common/peer_credentials.h"

namespace neuron::rtd {

// Maps the connections the daemon accepted to their peers, so that an RPC
// handler can tell who called from grpc::ServerContext::peer(), and bounds
// the connections of each user.
//
// Connections are handed to gRPC as file descriptors, and gRPC names such a
// peer "fd:N". gRPC closes a connection without telling the daemon; a
// descriptor number is reused only after that, so recording a new
// connection under the same number replaces a dead entry. An entry is live
// while its descriptor still names the socket it was recorded with (same
// device and inode): that is how connections of a user are counted.
//
// Thread-safety: all methods may be called from any thread.
// Lifetime: the system calls outlive the registry.
class PeerRegistry {
 public:
  explicit PeerRegistry(OsSysCalls& sys_calls) : sys_calls_(sys_calls) {}

  // Records a connection, unless its user already has `max_per_user` live
  // ones: then false, and the caller closes it. A grant's connections count
  // apart (a container's root is not the host's, and must not use up its
  // connections).
  bool Admit(int fd, const PeerCredentials& credentials, uint32_t max_per_user);

  // The peer of a gRPC call, from ServerContext::peer(); nullopt for a peer
  // the daemon did not accept itself.
  std::optional<PeerCredentials> Lookup(std::string_view grpc_peer) const;

  // Live connections of `uid` (through grant `grant`; empty: the daemon's
  // own socket); forgets the entries of closed ones.
  uint32_t ConnectionsOf(uid_t uid, const std::string& grant = {});

 private:
  struct Entry {
    PeerCredentials credentials;
    dev_t device = 0;
    ino_t inode = 0;
  };

  uint32_t ConnectionsOfLocked(uid_t uid, const std::string& grant)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  OsSysCalls& sys_calls_;
  mutable absl::Mutex mutex_;
  absl::flat_hash_map<int, Entry> by_fd_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_SERVER_PEER_CREDENTIALS_H_

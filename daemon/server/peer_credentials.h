// The peers of the connections the daemon accepted.
#ifndef NEURON_RTD_DAEMON_SERVER_PEER_CREDENTIALS_H_
#define NEURON_RTD_DAEMON_SERVER_PEER_CREDENTIALS_H_

#include <optional>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "daemon/common/peer_credentials.h"

namespace neuron::rtd {

// Maps the connections the daemon accepted to their peers, so that an RPC
// handler can tell who called from grpc::ServerContext::peer().
//
// Connections are handed to gRPC as file descriptors, and gRPC names such a
// peer "fd:N". A descriptor number is reused only after gRPC closed the old
// connection, which then makes no more calls, so recording a new connection
// under the same number replaces a dead entry. The map is bounded by the
// process's descriptor limit.
//
// Thread-safety: all methods may be called from any thread.
class PeerRegistry {
 public:
  void Record(int fd, const PeerCredentials& credentials);

  // The peer of a gRPC call, from ServerContext::peer(); nullopt for a peer
  // the daemon did not accept itself.
  std::optional<PeerCredentials> Lookup(std::string_view grpc_peer) const;

 private:
  mutable absl::Mutex mutex_;
  absl::flat_hash_map<int, PeerCredentials> by_fd_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_SERVER_PEER_CREDENTIALS_H_

// The data-plane endpoint: a SOCK_SEQPACKET Unix socket beside the gRPC
// socket where each session's client attaches
// (proto/neuron/rtd/abi/data_plane.h). A refused attach is answered with an
// attach reply carrying the error, and the connection closed; an accepted
// one with the session's completion page and staging regions. The daemon
// passes shared memory over these connections, and a connection's end
// closes its session at once.
#ifndef NEURON_RTD_DAEMON_SERVER_DATA_PLANE_H_
#define NEURON_RTD_DAEMON_SERVER_DATA_PLANE_H_

#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/session/session_manager.h"
#include "daemon/server/unix_socket_listener.h"

namespace neuron::rtd {

// Connections that have not attached to a session yet: each holds a file
// descriptor, so a client that opens many must not exhaust the daemon's.
struct PendingLimits {
  uint32_t total = 256;
  uint32_t per_user = 64;
};

// Thread-safety: Start and the destructor are called from one thread.
// Lifetime: the session manager outlives the data plane.
class DataPlane {
 public:
  // Listens on `path` with the mode and group of the gRPC socket.
  static absl::StatusOr<std::unique_ptr<DataPlane>> Create(ListenerOptions options,
                                                           PendingLimits limits,
                                                           session::SessionManager& sessions,
                                                           OsSysCalls& sys_calls);
  DataPlane(const DataPlane&) = delete;
  DataPlane& operator=(const DataPlane&) = delete;
  ~DataPlane();

  void Start();
  const std::string& path() const { return listener_->path(); }

  // Serves a connection accepted on the data-plane socket, or on another
  // one (a grant's, whose id `peer` carries). Any thread.
  void Accept(int fd, const PeerCredentials& peer);

 private:
  DataPlane(std::unique_ptr<UnixSocketListener> listener, PendingLimits limits,
            session::SessionManager& sessions);

  struct Connection {
    PeerCredentials peer;
    absl::Time accepted_at;
    uint64_t session_id = 0;  // 0 until attached
  };

  void Loop();
  void HandleReadable(int fd);
  void HandleAttach(int fd, Connection& connection);
  void Drop(int fd);
  void DropStaleUnattached();

  std::unique_ptr<UnixSocketListener> listener_;
  const PendingLimits limits_;
  session::SessionManager& sessions_;
  const int epoll_fd_;
  const int stop_fd_;
  absl::Mutex mutex_;
  std::map<int, Connection> connections_ ABSL_GUARDED_BY(mutex_);
  std::thread thread_;
};

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_SERVER_DATA_PLANE_H_

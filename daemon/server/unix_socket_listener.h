// The daemon's Unix-domain listening socket and its accept loop.
//
// Ownership of the path: a lock file beside the socket (PATH.lock, flock)
// makes exactly one daemon the owner of a socket path, even when several
// start at once. The owner removes a stale socket file left by a dead daemon,
// binds, sets the socket's mode and group, and removes the file again when
// it stops.
#ifndef NEURON_RTD_DAEMON_SERVER_UNIX_SOCKET_LISTENER_H_
#define NEURON_RTD_DAEMON_SERVER_UNIX_SOCKET_LISTENER_H_

#include <sys/socket.h>
#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/server/peer_credentials.h"

namespace neuron::rtd {

struct ListenerOptions {
  std::string path;
  // The socket file's mode: 0660 for the system socket, 0600 otherwise.
  mode_t mode = 0600;
  // Group given to the socket file, when set.
  std::optional<gid_t> group;
  // Mode of the socket's directory when the listener has to create it.
  mode_t directory_mode = 0700;
  // The directory must be owned by the daemon's user and closed to others
  // (the per-user socket's directory), or the listener refuses it: anyone
  // else who could write there could replace the socket.
  bool require_private_directory = false;
  // SOCK_STREAM (gRPC) or SOCK_SEQPACKET (the data plane).
  int socket_type = SOCK_STREAM;
};

// Thread-safety: Start and Stop are called from one thread; the connection
// callback runs on the accept thread.
// Lifetime: the destructor stops the accept loop and removes the socket.
class UnixSocketListener {
 public:
  using ConnectionCallback = std::function<void(int fd, const PeerCredentials& peer)>;

  // Takes ownership of the path and listens. FAILED_PRECONDITION when another
  // daemon serves the path (the message names its pid); other errors name the
  // path and the system call that failed.
  static absl::StatusOr<std::unique_ptr<UnixSocketListener>> Create(
      const ListenerOptions& options, OsSysCalls& sys_calls);

  UnixSocketListener(const UnixSocketListener&) = delete;
  UnixSocketListener& operator=(const UnixSocketListener&) = delete;
  ~UnixSocketListener();

  // Accepts connections on a thread of its own until Stop. The callback owns
  // each connected (non-blocking, close-on-exec) descriptor it is given.
  void Start(ConnectionCallback on_connection);

  // Stops accepting, closes the listening socket and removes the socket file.
  // Connections already accepted are not affected. Idempotent.
  void Stop();

  const std::string& path() const { return path_; }

 private:
  UnixSocketListener(std::string path, int lock_fd, int listen_fd, int wake_fd, ino_t inode,
                     OsSysCalls& sys_calls)
      : path_(std::move(path)),
        lock_fd_(lock_fd),
        listen_fd_(listen_fd),
        wake_fd_(wake_fd),
        inode_(inode),
        sys_calls_(sys_calls) {}

  void AcceptLoop(const ConnectionCallback& on_connection);

  const std::string path_;
  const int lock_fd_;
  int listen_fd_;
  const int wake_fd_;  // eventfd that ends the accept loop
  const ino_t inode_;  // of the socket file this listener created
  OsSysCalls& sys_calls_;
  std::thread accept_thread_;
};

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_SERVER_UNIX_SOCKET_LISTENER_H_

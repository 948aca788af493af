// neuron-rtd as a whole: the device backend, the gRPC services and the
// listening socket, started and stopped in the right order.
#ifndef NEURON_RTD_DAEMON_SERVER_DAEMON_H_
#define NEURON_RTD_DAEMON_SERVER_DAEMON_H_

#include <grpcpp/server.h>

#include <map>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/compiler/compile_service.h"
#include "daemon/config/config.h"
#include "daemon/hal/device.h"
#include "daemon/exec/executable_cache.h"
#include "daemon/memory/memory_manager.h"
#include "daemon/memory/segment_exports.h"
#include "daemon/queue/scheduler.h"
#include "daemon/server/admin_service.h"
#include "daemon/server/call_tracker.h"
#include "daemon/server/data_plane.h"
#include "daemon/server/grant_registry.h"
#include "daemon/server/daemon_status.h"
#include "daemon/server/peer_credentials.h"
#include "daemon/server/runtime_service.h"
#include "daemon/server/unix_socket_listener.h"
#include "daemon/session/session_manager.h"

namespace neuron::rtd {

// Thread-safety: Create, Start and Shutdown are called from one thread.
class Daemon {
 public:
  // Creates the backend and takes the socket; nothing is served until Start.
  static absl::StatusOr<std::unique_ptr<Daemon>> Create(const DaemonConfig& config,
                                                        OsSysCalls& sys_calls);
  ~Daemon();

  // Starts serving on the socket.
  absl::Status Start();

  // Stops accepting connections and removes the socket, lets in-flight calls
  // finish within `grace`, cancels the rest, ends every session, and returns
  // when the server has stopped.
  void Shutdown(absl::Duration grace);

  const std::string& socket_path() const { return listener_->path(); }

  // True when no session is open and no call is in flight: what
  // server.idle_exit_seconds measures.
  bool Idle();

 private:
  Daemon(const DaemonConfig& config, OsSysCalls& sys_calls,
         std::unique_ptr<compiler::CompileService> compiler, std::unique_ptr<hal::Backend> backend,
         std::unique_ptr<UnixSocketListener> listener,
         std::map<uint32_t, uint32_t> weights_by_uid,
         std::unique_ptr<collectives::FabricRouter> fabric);

  // A gRPC connection accepted on the daemon's socket or a grant's: handed
  // to the server unless its user has too many.
  void AcceptGrpc(int fd, const PeerCredentials& peer);

  const DaemonConfig config_;
  OsSysCalls& sys_calls_;
  DaemonStatus status_;
  PeerRegistry peers_;
  CallTracker calls_;
  // Destroyed in reverse: the data plane and the sessions first, then the
  // queues (whose copies may still hold segments), then memory, then devices.
  // Before the backend: its graph executables hold it.
  std::unique_ptr<compiler::CompileService> compiler_;
  std::unique_ptr<hal::Backend> backend_;
  memory::MemoryManager memory_;
  // Its entries only name segments (weakly): any order against the sessions.
  memory::SegmentExports segment_exports_;
  exec::ExecutableCache executables_;
  queue::Scheduler scheduler_;
  // The fabric to other hosts' daemons (null when none is configured):
  // outlives the communicators.
  std::unique_ptr<collectives::FabricRouter> fabric_;
  // After the queues (an aborted communicator wakes them), before the
  // sessions (whose ranks it outlives).
  collectives::CommunicatorRegistry communicators_;
  session::SessionManager sessions_;
  std::unique_ptr<UnixSocketListener> listener_;
  std::unique_ptr<DataPlane> data_plane_;
  // Its listeners hand connections to server_ and data_plane_: Shutdown
  // deletes every grant before those stop.
  GrantRegistry grants_;
  AdminService admin_service_;
  RuntimeService runtime_service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_SERVER_DAEMON_H_

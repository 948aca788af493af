// The daemon's grants and their sockets: each grant listens on a directory
// of its own, GRANTS/<id>/neuron-rtd.sock (gRPC) and neuron-rtd.sock.data
// (the data plane), which the Kubernetes device plugin bind-mounts read-only
// into a pod. A connection accepted there carries the grant's id in its
// PeerCredentials; what that allows is decided by the services and the
// session manager (session::Grant, MayActOn).
#ifndef NEURON_RTD_DAEMON_SERVER_GRANT_REGISTRY_H_
#define NEURON_RTD_DAEMON_SERVER_GRANT_REGISTRY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/server/unix_socket_listener.h"
#include "daemon/session/grant.h"

namespace neuron::rtd {

struct GrantRegistryOptions {
  // Where grant directories are made ([server] grants_directory).
  std::string directory;
  uint32_t max_grants = 256;
  // Cores the host has: a grant names some of them.
  uint32_t host_cores = 0;
};

// Thread-safety: every method may be called from any thread; the
// connection callbacks run on the grants' accept threads.
// Lifetime: the callbacks' targets outlive the registry; the destructor
// stops every listener and removes every grant directory.
class GrantRegistry {
 public:
  GrantRegistry(GrantRegistryOptions options, OsSysCalls& sys_calls,
                UnixSocketListener::ConnectionCallback on_grpc_connection,
                UnixSocketListener::ConnectionCallback on_data_connection);
  GrantRegistry(const GrantRegistry&) = delete;
  GrantRegistry& operator=(const GrantRegistry&) = delete;
  ~GrantRegistry();

  struct Listed {
    std::shared_ptr<session::Grant> grant;
    std::string directory;
  };

  // Makes the grant's directory and listens there. Idempotent: a grant of
  // the same id, cores and quota is returned as it is (`created` false).
  // INVALID_ARGUMENT for a bad id, no cores, a core the host lacks or a
  // label over 256 bytes; ALREADY_EXISTS for the id with other terms;
  // RESOURCE_EXHAUSTED past max_grants; the listener's error (naming the
  // path) when its sockets cannot be made.
  struct Created {
    Listed grant;
    bool created = false;
  };
  absl::StatusOr<Created> Create(const std::string& id, std::vector<uint32_t> cores,
                                 uint64_t hbm_quota_bytes, std::string label);

  // Stops listening and removes the grant's directory; its sessions are
  // the caller's to end. NOT_FOUND when there is no such grant.
  absl::Status Delete(const std::string& id);

  // Deletes every grant (the daemon stopping).
  void DeleteAll();

  // Null when there is no such grant (any more).
  std::shared_ptr<session::Grant> Find(const std::string& id) const;
  // The grant whose socket `peer` connected through: null for the daemon's
  // own socket; PERMISSION_DENIED when that grant was deleted since.
  absl::StatusOr<std::shared_ptr<session::Grant>> OfPeer(const PeerCredentials& peer) const;
  std::vector<Listed> List() const;

 private:
  struct Entry {
    std::shared_ptr<session::Grant> grant;
    std::unique_ptr<UnixSocketListener> grpc;
    std::unique_ptr<UnixSocketListener> data;
  };
  std::string DirectoryOf(const std::string& id) const;
  void RemoveDirectory(const std::string& id) const;

  const GrantRegistryOptions options_;
  OsSysCalls& sys_calls_;
  const UnixSocketListener::ConnectionCallback on_grpc_connection_;
  const UnixSocketListener::ConnectionCallback on_data_connection_;
  mutable absl::Mutex mutex_;
  std::map<std::string, Entry> grants_ ABSL_GUARDED_BY(mutex_);
};

// The grant's gRPC socket in its directory; the data-plane socket is this
// name plus ".data".
inline constexpr char kGrantSocketName[] = "neuron-rtd.sock";

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_SERVER_GRANT_REGISTRY_H_

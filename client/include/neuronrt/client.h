// libneuronrt: the C++ client of neuron-rtd. No PyTorch dependency.
#ifndef NEURONRT_CLIENT_H_
#define NEURONRT_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "neuronrt/address.h"
#include "neuronrt/device_info.h"
#include "neuronrt/stats.h"

namespace neuronrt {

struct ClientOptions {
  // "unix:/path"; empty resolves as ResolveDaemonAddress describes.
  std::string address;
  // Deadline of each control-plane call.
  absl::Duration rpc_timeout = absl::Seconds(10);
};

// A connection to one daemon.
//
// Errors: UNAVAILABLE when the daemon cannot be reached (the message names
// the address and where it came from); otherwise the daemon's own status.
// Thread-safety: every method may be called from any thread at once.
class Client {
 public:
  // Resolves the address and prepares the connection; nothing is sent until
  // the first call. UNAVAILABLE when no socket exists at the address.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options = {});

  virtual ~Client() = default;

  virtual const DaemonAddress& address() const = 0;

  virtual absl::StatusOr<std::vector<DeviceInfo>> ListDevices() const = 0;
  virtual absl::StatusOr<HealthInfo> Health() const = 0;
  virtual absl::StatusOr<RuntimeInfo> GetRuntimeInfo() const = 0;

  // Administration (neuronctl ps, kill).
  virtual absl::StatusOr<std::vector<SessionInfo>> ListSessions() const = 0;
  // Ends another session as if its client had died: root or the same user.
  virtual absl::Status KillSession(uint64_t session_id, const std::string& reason) const = 0;
  // Sets a session's weight (1 to 1000) in its cores' fair queues: root or
  // the same user.
  virtual absl::Status SetSessionWeight(uint64_t session_id, uint32_t weight) const = 0;
  // Stops (or, with false, resumes) admitting sessions; returns the daemon's
  // state ("draining" or "serving"). Root or the daemon's user.
  virtual absl::StatusOr<std::string> Drain(bool enable) const = 0;
  virtual absl::StatusOr<Stats> GetStats() const = 0;
  // Ends every session on device `device_index`; returns their ids.
  virtual absl::StatusOr<std::vector<uint64_t>> ResetDevice(uint32_t device_index) const = 0;
  // With `list_executables`, every cached executable too.
  virtual absl::StatusOr<CacheInfo> GetCacheInfo(bool list_executables = false) const = 0;
  // Evicts every executable no session holds, and with `include_disk` the
  // compiled graphs on disk (root or the daemon's user).
  virtual absl::StatusOr<ClearedCache> ClearCache(bool include_disk = false) const = 0;
  virtual absl::StatusOr<std::vector<CommunicatorInfo>> ListCommunicators() const = 0;

  // Grants (root or the daemon's user, on the daemon's own socket).
  // Creating is idempotent for the same id, cores and quota; `created` says
  // whether it was made now.
  virtual absl::StatusOr<GrantInfo> CreateGrant(const std::string& grant_id,
                                                const std::vector<uint32_t>& cores,
                                                uint64_t hbm_quota_bytes, const std::string& label,
                                                bool* created = nullptr) const = 0;
  // Ends the sessions opened through it; returns their ids.
  virtual absl::StatusOr<std::vector<uint64_t>> DeleteGrant(const std::string& grant_id,
                                                            const std::string& reason) const = 0;
  // Through a grant's socket: that grant only.
  virtual absl::StatusOr<std::vector<GrantInfo>> ListGrants() const = 0;
};

}  // namespace neuronrt

#endif  // NEURONRT_CLIENT_H_

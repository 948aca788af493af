// A grant: cores and an HBM quota that the sessions opened through its
// socket are confined to (a Kubernetes pod's allocation). The socket and its
// directory belong to the server (daemon/server/grant_registry.h); this is
// what sessions see.
#ifndef NEURON_RTD_DAEMON_SESSION_GRANT_H_
#define NEURON_RTD_DAEMON_SESSION_GRANT_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace neuron::rtd::session {

// Thread-safety: every method may be called from any thread.
class Grant {
 public:
  // `cores` sorted, without duplicates; `hbm_quota_bytes` 0: no quota.
  Grant(std::string id, std::vector<uint32_t> cores, uint64_t hbm_quota_bytes, std::string label);

  const std::string& id() const { return id_; }
  const std::vector<uint32_t>& cores() const { return cores_; }
  uint64_t hbm_quota_bytes() const { return hbm_quota_bytes_; }
  const std::string& label() const { return label_; }
  absl::Time created_at() const { return created_at_; }
  bool HasCore(uint32_t core) const;

  // Charges `bytes` to the grant before they are allocated:
  // RESOURCE_EXHAUSTED, naming the grant and its figures, when they do not
  // fit in the quota.
  absl::Status ReserveHbm(uint64_t bytes);
  void ReleaseHbm(uint64_t bytes);
  uint64_t hbm_used_bytes() const { return hbm_used_.load(std::memory_order_relaxed); }

  // Deleted: no session may open through it any more.
  void Revoke() { revoked_.store(true, std::memory_order_release); }
  bool revoked() const { return revoked_.load(std::memory_order_acquire); }

 private:
  const std::string id_;
  const std::vector<uint32_t> cores_;
  const uint64_t hbm_quota_bytes_;
  const std::string label_;
  const absl::Time created_at_;
  std::atomic<uint64_t> hbm_used_{0};
  std::atomic<bool> revoked_{false};
};

}  // namespace neuron::rtd::session

#endif  // NEURON_RTD_DAEMON_SESSION_GRANT_H_

// The communicators of the host: the secret ids that rendezvous by, and a
// watchdog that aborts communicators whose operations wait too long.
//
// Thread-safety: every method may be called from any thread.
// Lifetime: outlives every session (the daemon destroys sessions first);
// the destructor stops the watchdog and aborts what is still alive.
#ifndef NEURON_RTD_DAEMON_COLLECTIVES_COMMUNICATOR_REGISTRY_H_
#define NEURON_RTD_DAEMON_COLLECTIVES_COMMUNICATOR_REGISTRY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/collectives/communicator.h"
#include "daemon/collectives/fabric_router.h"
#include "daemon/collectives/host_algorithm.h"
#include "daemon/collectives/host_topology.h"

namespace neuron::rtd::collectives {

struct RegistryOptions {
  // Ids a session may have created that no rank has finished joining.
  uint32_t max_pending_ids_per_session = 64;
  // How often the watchdog looks for overdue operations.
  absl::Duration watchdog_period = absl::Milliseconds(100);
  // Of communicators that span hosts ([fabric] recursive_doubling_max_bytes).
  HostAlgorithmOptions host_algorithms;
};

class CommunicatorRegistry {
 public:
  // `router` (may be null: no fabric) carries communicators that span
  // hosts; it outlives the registry.
  explicit CommunicatorRegistry(RegistryOptions options = {}, FabricRouter* router = nullptr);
  CommunicatorRegistry(const CommunicatorRegistry&) = delete;
  CommunicatorRegistry& operator=(const CommunicatorRegistry&) = delete;
  ~CommunicatorRegistry();

  // A new unguessable id (kIdBytes random bytes), which ranks join by.
  // RESOURCE_EXHAUSTED when the session has too many ids not yet joined.
  // An id nobody joined is forgotten once `owner` (the session) is gone.
  static constexpr size_t kIdBytes = 32;
  absl::StatusOr<std::string> CreateId(uint64_t session_id, std::weak_ptr<const void> owner);

  // Joins `rank` of the communicator `id` names (the first join fixes its
  // size, timeout and hosts) and waits until every rank has joined (see
  // Communicator::Join). NOT_FOUND for an id this daemon did not create or
  // whose rendezvous is over; INVALID_ARGUMENT when the size or hosts
  // differ from the first rank's; FAILED_PRECONDITION for hosts without a
  // fabric.
  absl::StatusOr<std::shared_ptr<Communicator>> Join(
      std::string_view id, uint32_t rank, uint32_t size, std::string member,
      absl::Duration join_timeout, absl::Duration operation_timeout,
      std::optional<HostTopology> hosts = std::nullopt);

  FabricRouter* router() const { return router_; }
  // 16 random bytes drawn at construction: ranks that see the same bytes
  // reach the same daemon, whatever address they used.
  const std::string& instance_id() const { return instance_id_; }

  // The live communicators.
  std::vector<Communicator::Info> List() const;
  // What every communicator, live or gone, has run.
  CollectiveCounters::Snapshot counters() const { return counters_->snapshot(); }

 private:
  struct PendingId {
    uint64_t creator = 0;
    std::weak_ptr<const void> owner;
    std::shared_ptr<Communicator> communicator;
  };
  void Watch();

  const RegistryOptions options_;
  FabricRouter* const router_;
  const std::string instance_id_;
  const std::shared_ptr<CollectiveCounters> counters_ = std::make_shared<CollectiveCounters>();
  mutable absl::Mutex mutex_;
  std::map<std::string, PendingId> pending_ ABSL_GUARDED_BY(mutex_);
  std::vector<std::weak_ptr<Communicator>> live_ ABSL_GUARDED_BY(mutex_);
  uint64_t next_name_ ABSL_GUARDED_BY(mutex_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::thread watchdog_;
};

}  // namespace neuron::rtd::collectives

#endif  // NEURON_RTD_DAEMON_COLLECTIVES_COMMUNICATOR_REGISTRY_H_

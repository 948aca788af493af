// One scrape's view of the daemon: what the exporter asks neuron-rtd for
// (and the kubelet, when pod labels are on), in one place so that every
// metric family is a pure function of it.
#ifndef NEURON_RTD_EXPORTER_DAEMON_SNAPSHOT_H_
#define NEURON_RTD_EXPORTER_DAEMON_SNAPSHOT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "neuronrt/client.h"

namespace neuron_exporter {

// The container a core is allocated to.
struct CoreHolder {
  std::string pod;
  std::string pod_namespace;
  std::string container;
};
// By host-wide core index; cores no container holds are absent.
using CoreHolders = std::map<uint32_t, CoreHolder>;

struct DaemonSnapshot {
  neuronrt::HealthInfo health;
  std::vector<neuronrt::DeviceInfo> devices;
  neuronrt::Stats stats;
  // Only when per-session metrics are on.
  std::vector<neuronrt::SessionInfo> sessions;
  // Only when pod labels are on.
  CoreHolders core_holders;
};

// Four (five with sessions) unary calls; the first error is returned.
absl::StatusOr<DaemonSnapshot> TakeSnapshot(const neuronrt::Client& client, bool with_sessions);

}  // namespace neuron_exporter

#endif  // NEURON_RTD_EXPORTER_DAEMON_SNAPSHOT_H_

// One scrape's view of the daemon: what the exporter asks neuron-rtd for,
// in one place so that every metric family is a pure function of it.
#ifndef NEURON_RTD_EXPORTER_DAEMON_SNAPSHOT_H_
#define NEURON_RTD_EXPORTER_DAEMON_SNAPSHOT_H_

#include <vector>

#include "absl/status/statusor.h"
#include "neuronrt/client.h"

namespace neuron_exporter {

struct DaemonSnapshot {
  neuronrt::HealthInfo health;
  std::vector<neuronrt::DeviceInfo> devices;
  neuronrt::Stats stats;
  // Only when per-session metrics are on.
  std::vector<neuronrt::SessionInfo> sessions;
};

// Four (five with sessions) unary calls; the first error is returned.
absl::StatusOr<DaemonSnapshot> TakeSnapshot(const neuronrt::Client& client, bool with_sessions);

}  // namespace neuron_exporter

#endif  // NEURON_RTD_EXPORTER_DAEMON_SNAPSHOT_H_

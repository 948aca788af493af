#include "client/exporter/daemon_snapshot.h"

#include <utility>

namespace neuron_exporter {

absl::StatusOr<DaemonSnapshot> TakeSnapshot(const neuronrt::Client& client, bool with_sessions) {
  DaemonSnapshot snapshot;
  absl::StatusOr<neuronrt::HealthInfo> health = client.Health();
  if (!health.ok()) return health.status();
  snapshot.health = *std::move(health);
  absl::StatusOr<std::vector<neuronrt::DeviceInfo>> devices = client.ListDevices();
  if (!devices.ok()) return devices.status();
  snapshot.devices = *std::move(devices);
  absl::StatusOr<neuronrt::Stats> stats = client.GetStats();
  if (!stats.ok()) return stats.status();
  snapshot.stats = *std::move(stats);
  if (with_sessions) {
    absl::StatusOr<std::vector<neuronrt::SessionInfo>> sessions = client.ListSessions();
    if (!sessions.ok()) return sessions.status();
    snapshot.sessions = *std::move(sessions);
  }
  return snapshot;
}

}  // namespace neuron_exporter

// The families AWS's neuron-monitor Prometheus exporter serves, under its
// names and labels, computed from the same snapshot, so that dashboards and
// CloudWatch receivers built for neuron-monitor work unchanged
// ([exporter] neuron_monitor_compat). docs/operations.md gives the mapping.
#ifndef NEURON_RTD_EXPORTER_NEURON_MONITOR_COMPAT_H_
#define NEURON_RTD_EXPORTER_NEURON_MONITOR_COMPAT_H_

#include <optional>

#include "client/exporter/daemon_snapshot.h"
#include "client/exporter/families.h"

namespace neuron_exporter {

// The daemon's CPU time at a moment, to turn into a usage ratio between
// two scrapes.
struct CpuSample {
  double monotonic_seconds = 0;
  double user_seconds = 0;
  double system_seconds = 0;
};

// `previous`: the last scrape's sample (none on the first scrape, when the
// vCPU usage ratio is not served); `host_cpus`: the host's vCPUs.
void AddNeuronMonitorFamilies(const DaemonSnapshot& snapshot, const CpuSample& now,
                              const std::optional<CpuSample>& previous, unsigned host_cpus,
                              Families& families);

}  // namespace neuron_exporter

#endif  // NEURON_RTD_EXPORTER_NEURON_MONITOR_COMPAT_H_

// The exporter's own metric families (neuron_core_*, neuron_device_*,
// neuron_rtd_*) from one snapshot of the daemon. docs/operations.md lists
// every family and its labels.
#ifndef NEURON_RTD_EXPORTER_METRIC_FAMILIES_H_
#define NEURON_RTD_EXPORTER_METRIC_FAMILIES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "client/exporter/daemon_snapshot.h"
#include "client/exporter/families.h"

namespace neuron_exporter {

// The daemon's log2 histogram (bucket i: [2^(i-1), 2^i) ns) as
// neuron_core_execution_duration_seconds: upper bounds of powers of two
// nanoseconds, 2^10 (about 1 us) to 2^34 (about 17 s), a factor of 4 apart,
// then +Inf; exact, because the daemon counts in power-of-two buckets.
HistogramSample ExecutionDurationHistogram(const neuronrt::CoreStats& core);

// pod, namespace and container of the container holding `core`; none when
// no container does (or pod labels are off).
Labels PodLabelsOf(const CoreHolders& holders, uint32_t core);

// The ECC counts a device reports, by neuron-monitor's event_type
// (mem_ecc_corrected, mem_ecc_uncorrected, sram_ecc_corrected,
// sram_ecc_uncorrected) and, unless `neuron_monitor_types_only`, the
// driver's mem_ecc_repairable_uncorrected; the ones it does not report are
// left out.
std::vector<std::pair<std::string, uint64_t>> EccEvents(const neuronrt::EccCounts& ecc,
                                                        bool neuron_monitor_types_only);

struct FamilyOptions {
  // Series per session (labels session_id, pid, uid, client): as many
  // series as sessions, so off unless asked for.
  bool per_session = false;
};

void AddDaemonFamilies(const DaemonSnapshot& snapshot, const FamilyOptions& options,
                       Families& families);

}  // namespace neuron_exporter

#endif  // NEURON_RTD_EXPORTER_METRIC_FAMILIES_H_

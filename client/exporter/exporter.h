// neuron-rtd-exporter's work, apart from HTTP: a scrape asks the daemon for
// one snapshot and renders it in the Prometheus text format.
#ifndef NEURON_RTD_EXPORTER_EXPORTER_H_
#define NEURON_RTD_EXPORTER_EXPORTER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/exporter/families.h"
#include "client/exporter/neuron_monitor_compat.h"
#include "client/k8s/device_ids.h"
#include "neuronrt/client.h"

namespace neuron_exporter {

struct ExporterOptions {
  // The daemon: "unix:/path"; empty resolves as libneuronrt does
  // (NEURON_RTD_ADDRESS, then the default socket).
  std::string address;
  // HOST:PORT to serve on (port 0: any free port).
  std::string listen = "127.0.0.1:9482";
  // Also the families AWS's neuron-monitor exporter serves, by its names.
  bool neuron_monitor_compat = false;
  // Series per session (cardinality grows with sessions).
  bool per_session = false;
  // The kubelet's pod-resources socket: when set, per-core series carry the
  // pod, namespace and container that hold the core (as the device plugin
  // allocated it under `resource_name`, or its device under
  // `device_resource_name`).
  std::string pod_resources_socket;
  std::string resource_name = neuron_k8s::kDefaultCoreResourceName;
  // Empty: the plugin serves no resource of whole devices.
  std::string device_resource_name;
  // Added to every series (e.g. instance_type, cluster).
  Labels labels;
  // Deadline of each call to the daemon.
  absl::Duration daemon_timeout = absl::Seconds(5);
};

// Thread-safety: Scrape and Health may be called from any thread; scrapes
// run one at a time.
class Exporter {
 public:
  // `monotonic_seconds`: the clock of CPU usage ratios (tests replace it).
  explicit Exporter(ExporterOptions options,
                    std::function<double()> monotonic_seconds = nullptr);

  // The exposition text. When the daemon cannot be reached, only
  // neuron_rtd_daemon_up 0 and the exporter's own families: Prometheus
  // still scrapes successfully and the alert on daemon_up fires.
  std::string Scrape();

  // OK when the daemon answers and serves (its state is "serving").
  absl::Status Health();

 private:
  // The client, connecting when there is none (the daemon may start after
  // the exporter, or restart).
  absl::StatusOr<neuronrt::Client*> Connected() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // A failed call drops the client, so that the next scrape reconnects at
  // once instead of waiting out gRPC's reconnection backoff.
  void Forget(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Asks the kubelet which pod holds each core (a device's pod holds each
  // of its cores in `devices`). When it cannot answer, the last answer
  // stands (labels that came and went with each failed call would start new
  // series) and the error is counted.
  void RefreshCoreHolders(const std::vector<neuronrt::DeviceInfo>& devices)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const ExporterOptions options_;
  const std::function<double()> monotonic_seconds_;
  absl::Mutex mutex_;
  std::unique_ptr<neuronrt::Client> client_ ABSL_GUARDED_BY(mutex_);
  std::optional<CpuSample> previous_cpu_ ABSL_GUARDED_BY(mutex_);
  uint64_t scrape_errors_ ABSL_GUARDED_BY(mutex_) = 0;
  CoreHolders core_holders_ ABSL_GUARDED_BY(mutex_);
  uint64_t pod_resources_errors_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace neuron_exporter

#endif  // NEURON_RTD_EXPORTER_EXPORTER_H_

#include "client/exporter/exporter.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "client/exporter/daemon_snapshot.h"
#include "client/exporter/metric_families.h"
#include "client/k8s/pod_resources.h"
#include "prometheus/text_serializer.h"

namespace neuron_exporter {
namespace {

// The kubelet answers from memory; a slow answer should not hold the scrape.
constexpr absl::Duration kPodResourcesTimeout = absl::Seconds(2);

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Exporter::Exporter(ExporterOptions options, std::function<double()> monotonic_seconds)
    : options_(std::move(options)),
      monotonic_seconds_(monotonic_seconds ? std::move(monotonic_seconds) : SteadySeconds) {}

absl::StatusOr<neuronrt::Client*> Exporter::Connected() {
  if (client_ == nullptr) {
    absl::StatusOr<std::unique_ptr<neuronrt::Client>> client = neuronrt::Client::Connect(
        {.address = options_.address, .rpc_timeout = options_.daemon_timeout});
    if (!client.ok()) return client.status();
    client_ = *std::move(client);
  }
  return client_.get();
}

void Exporter::Forget(const absl::Status& status) {
  if (absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status)) client_.reset();
}

void Exporter::RefreshCoreHolders(const std::vector<neuronrt::DeviceInfo>& devices) {
  std::vector<neuron_k8s::Resource> resources = {
      {.name = options_.resource_name, .unit = neuron_k8s::Unit::kCore}};
  if (!options_.device_resource_name.empty()) {
    resources.push_back({.name = options_.device_resource_name, .unit = neuron_k8s::Unit::kDevice});
  }
  absl::StatusOr<std::vector<neuron_k8s::ContainerDevices>> held =
      neuron_k8s::ListContainerDevices(options_.pod_resources_socket, resources,
                                       std::min(options_.daemon_timeout, kPodResourcesTimeout));
  if (!held.ok()) {
    ++pod_resources_errors_;
    return;
  }
  core_holders_.clear();
  for (const neuron_k8s::ContainerDevices& container : *held) {
    std::vector<uint32_t> cores = container.indices;
    if (container.resource.unit == neuron_k8s::Unit::kDevice) {
      // A device this host does not have holds no core of it.
      cores.clear();
      for (uint32_t device : container.indices) {
        absl::StatusOr<std::vector<uint32_t>> of = neuron_k8s::CoresOfDevices(devices, {device});
        if (of.ok()) cores.insert(cores.end(), of->begin(), of->end());
      }
    }
    for (uint32_t core : cores) {
      core_holders_[core] = {.pod = container.pod,
                             .pod_namespace = container.pod_namespace,
                             .container = container.container};
    }
  }
}

std::string Exporter::Scrape() {
  absl::MutexLock lock(&mutex_);
  Families families(options_.labels);
  const double started = monotonic_seconds_();
  absl::StatusOr<DaemonSnapshot> snapshot = absl::UnavailableError("not asked");
  if (absl::StatusOr<neuronrt::Client*> client = Connected(); client.ok()) {
    snapshot = TakeSnapshot(**client, options_.per_session);
    if (!snapshot.ok()) Forget(snapshot.status());
  } else {
    snapshot = client.status();
  }
  const double took = monotonic_seconds_() - started;
  families.Gauge("neuron_rtd_daemon_up",
                 "1 when the exporter's last scrape reached neuron-rtd, 0 when it could not.", {},
                 snapshot.ok() ? 1 : 0);
  const bool pod_labels = !options_.pod_resources_socket.empty();
  if (snapshot.ok()) {
    if (pod_labels) {
      RefreshCoreHolders(snapshot->devices);
      snapshot->core_holders = core_holders_;
    }
    AddDaemonFamilies(*snapshot, FamilyOptions{.per_session = options_.per_session}, families);
    if (options_.neuron_monitor_compat) {
      const CpuSample now{.monotonic_seconds = started,
                          .user_seconds = snapshot->stats.daemon.cpu_user_seconds,
                          .system_seconds = snapshot->stats.daemon.cpu_system_seconds};
      AddNeuronMonitorFamilies(*snapshot, now, previous_cpu_,
                               std::max(1u, std::thread::hardware_concurrency()), families);
      previous_cpu_ = now;
    }
  } else {
    ++scrape_errors_;
  }
  families.Gauge("neuron_rtd_exporter_scrape_duration_seconds",
                 "How long this scrape's calls to neuron-rtd took.", {}, took);
  families.Counter("neuron_rtd_exporter_scrape_errors_total",
                   "Scrapes that could not reach neuron-rtd or were refused.", {},
                   static_cast<double>(scrape_errors_));
  if (pod_labels) {
    families.Counter("neuron_rtd_exporter_pod_resources_errors_total",
                     "Scrapes whose question to the kubelet's pod resources failed (the "
                     "previous answer labelled the cores).",
                     {}, static_cast<double>(pod_resources_errors_));
  }
  return prometheus::TextSerializer().Serialize(std::move(families).Take());
}

absl::Status Exporter::Health() {
  absl::MutexLock lock(&mutex_);
  absl::StatusOr<neuronrt::Client*> client = Connected();
  if (!client.ok()) return client.status();
  absl::StatusOr<neuronrt::HealthInfo> health = (*client)->Health();
  if (!health.ok()) {
    Forget(health.status());
    return health.status();
  }
  if (!health->serving()) {
    return absl::UnavailableError(absl::StrFormat("neuron-rtd is %s", health->state));
  }
  return absl::OkStatus();
}

}  // namespace neuron_exporter

#include "client/exporter/neuron_monitor_compat.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "client/exporter/metric_families.h"

namespace neuron_exporter {
namespace {

// neuron-monitor labels every runtime series with the runtime's tag; the
// daemon is the one runtime of the host.
constexpr char kRuntimeTag[] = "neuron-rtd";

uint64_t LaunchCount(const neuronrt::Stats& stats, std::string_view outcome) {
  uint64_t count = 0;
  for (const neuronrt::CoreStats& core : stats.cores) {
    for (const neuronrt::CommandCount& each : core.commands) {
      if (each.kind == "launch" && each.outcome == outcome) count += each.count;
    }
  }
  return count;
}

// Percentiles of every core's execution times together, in seconds: the
// upper bound of the power-of-two bucket where the fraction is reached (the
// lower bound for p0).
std::vector<std::pair<std::string, double>> LatencyPercentiles(const neuronrt::Stats& stats) {
  std::vector<uint64_t> merged;
  for (const neuronrt::CoreStats& core : stats.cores) {
    merged.resize(std::max(merged.size(), core.execution_ns_log2_buckets.size()));
    for (size_t i = 0; i < core.execution_ns_log2_buckets.size(); ++i) {
      merged[i] += core.execution_ns_log2_buckets[i];
    }
  }
  uint64_t total = 0;
  for (uint64_t count : merged) total += count;
  std::vector<std::pair<std::string, double>> percentiles;
  if (total == 0) return percentiles;
  constexpr std::array<std::pair<const char*, double>, 7> kWanted = {
      {{"p0", 0}, {"p1", 0.01}, {"p25", 0.25}, {"p50", 0.5}, {"p75", 0.75}, {"p99", 0.99},
       {"p100", 1}}};
  for (const auto& [name, fraction] : kWanted) {
    const uint64_t target =
        std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(fraction * static_cast<double>(total))));
    uint64_t seen = 0;
    size_t bucket = 0;
    for (; bucket < merged.size(); ++bucket) {
      seen += merged[bucket];
      if (seen >= target) break;
    }
    const int exponent = fraction == 0 ? static_cast<int>(bucket) - 1 : static_cast<int>(bucket);
    percentiles.emplace_back(name, exponent < 0 ? 0.0 : std::ldexp(1.0, exponent) / 1e9);
  }
  return percentiles;
}

}  // namespace

void AddNeuronMonitorFamilies(const DaemonSnapshot& snapshot, const CpuSample& now,
                              const std::optional<CpuSample>& previous, unsigned host_cpus,
                              Families& out) {
  const neuronrt::Stats& stats = snapshot.stats;
  for (const neuronrt::CoreStats& core : stats.cores) {
    Labels labels = {{"neuroncore", std::to_string(core.core)}, {"runtime_tag", kRuntimeTag}};
    const Labels pod = PodLabelsOf(snapshot.core_holders, core.core);
    labels.insert(labels.end(), pod.begin(), pod.end());
    out.Gauge("neuroncore_utilization_ratio",
              "neuron-monitor: the NeuronCore's utilization, 0 to 1.", labels,
              core.recent_compute_utilization);
  }
  for (const neuronrt::DeviceStats& device : stats.devices) {
    for (const neuronrt::DeviceStats::CoreMemory& core : device.core_memory) {
      Labels labels = {{"neuroncore", std::to_string(core.core)},
                       {"memory_location", "None"},
                       {"runtime_tag", kRuntimeTag}};
      const Labels pod = PodLabelsOf(snapshot.core_holders, core.core);
      labels.insert(labels.end(), pod.begin(), pod.end());
      for (const auto& [name, bytes] :
           {std::pair{"neuroncore_memory_usage_constants", core.constants},
            std::pair{"neuroncore_memory_usage_model_code", core.model_code},
            std::pair{"neuroncore_memory_usage_model_shared_scratchpad", core.scratchpad},
            std::pair{"neuroncore_memory_usage_runtime_memory", core.runtime},
            std::pair{"neuroncore_memory_usage_tensors", core.tensors}}) {
        out.Gauge(name, "neuron-monitor: the NeuronCore's device memory of one kind, in bytes.",
                  labels, static_cast<double>(bytes));
      }
    }
  }
  uint64_t device_bytes = 0;
  for (const neuronrt::DeviceStats& device : stats.devices) {
    device_bytes += device.tensors_bytes + device.runtime_bytes.value_or(0);
    if (device.programs) {
      device_bytes += device.programs->model_code + device.programs->constants +
                      device.programs->scratchpad;
    }
    for (const auto& [type, count] :
         EccEvents(device.ecc, /*neuron_monitor_types_only=*/true)) {
      out.Counter("hardware_ecc_events_total",
                  "neuron-monitor: error-correction events of a device, by type.",
                  {{"event_type", type},
                   {"neuron_device_index", std::to_string(device.device_index)}},
                  static_cast<double>(count));
    }
  }
  out.Gauge("neuron_runtime_memory_used_bytes",
            "neuron-monitor: memory the runtime uses, on the host and on the devices.",
            {{"memory_location", "host"}, {"runtime_tag", kRuntimeTag}},
            static_cast<double>(stats.daemon.resident_memory_bytes));
  out.Gauge("neuron_runtime_memory_used_bytes",
            "neuron-monitor: memory the runtime uses, on the host and on the devices.",
            {{"memory_location", "neuron_device"}, {"runtime_tag", kRuntimeTag}},
            static_cast<double>(device_bytes));

  // Executions are launches; a launch the operator refused had bad input,
  // one that failed its stream completed with an error.
  const uint64_t rejected = LaunchCount(stats, "rejected");
  const uint64_t failed = LaunchCount(stats, "failed");
  const std::array<std::pair<const char*, uint64_t>, 6> statuses = {{
      {"completed", LaunchCount(stats, "completed")},
      {"completed_with_err", failed},
      {"completed_with_num_err", 0},
      {"timed_out", LaunchCount(stats, "timed_out")},
      {"incorrect_input", rejected},
      {"failed_to_queue", LaunchCount(stats, "abandoned")},
  }};
  for (const auto& [status, count] : statuses) {
    out.Counter("execution_status_total", "neuron-monitor: executions, by how they ended.",
                {{"status_type", status}, {"runtime_tag", kRuntimeTag}},
                static_cast<double>(count));
  }
  const std::array<std::pair<const char*, uint64_t>, 6> errors = {{
      {"generic", 0},
      {"numerical", 0},
      {"transient", 0},
      {"model", rejected},
      {"runtime", failed},
      {"hardware", snapshot.health.failed_cores.size()},
  }};
  for (const auto& [type, count] : errors) {
    out.Counter("execution_errors_total", "neuron-monitor: execution errors, by type.",
                {{"error_type", type}, {"runtime_tag", kRuntimeTag}},
                static_cast<double>(count));
  }
  for (const auto& [percentile, seconds] : LatencyPercentiles(stats)) {
    out.Gauge("execution_latency_seconds",
              "neuron-monitor: execution latency percentiles since the daemon started.",
              {{"percentile", percentile}, {"runtime_tag", kRuntimeTag}}, seconds);
  }
  if (previous.has_value() && now.monotonic_seconds > previous->monotonic_seconds &&
      host_cpus > 0) {
    const double capacity = (now.monotonic_seconds - previous->monotonic_seconds) * host_cpus;
    out.Gauge("neuron_runtime_vcpu_usage_ratio",
              "neuron-monitor: the share of the host's vCPU time the runtime used since the "
              "last scrape.",
              {{"usage_type", "user"}, {"runtime_tag", kRuntimeTag}},
              std::max(0.0, now.user_seconds - previous->user_seconds) / capacity);
    out.Gauge("neuron_runtime_vcpu_usage_ratio",
              "neuron-monitor: the share of the host's vCPU time the runtime used since the "
              "last scrape.",
              {{"usage_type", "system"}, {"runtime_tag", kRuntimeTag}},
              std::max(0.0, now.system_seconds - previous->system_seconds) / capacity);
  }
}

}  // namespace neuron_exporter

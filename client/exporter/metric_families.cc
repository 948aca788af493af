#include "client/exporter/metric_families.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>

namespace neuron_exporter {
namespace {

constexpr int kFirstBoundLog2 = 10;
constexpr int kLastBoundLog2 = 34;
constexpr int kBoundStepLog2 = 2;

std::string Str(uint64_t value) { return std::to_string(value); }

double Seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

// Host-wide core index to its device's index.
std::map<uint32_t, uint32_t> DeviceOfCore(const std::vector<neuronrt::DeviceInfo>& devices) {
  std::map<uint32_t, uint32_t> device_of;
  for (const neuronrt::DeviceInfo& device : devices) {
    for (uint32_t core : device.cores) device_of[core] = device.index;
  }
  return device_of;
}

void AddDaemon(const DaemonSnapshot& snapshot, Families& out) {
  const neuronrt::DaemonStats& daemon = snapshot.stats.daemon;
  out.Gauge("neuron_rtd_build_info", "The daemon's version and device backend (always 1).",
            {{"version", daemon.version}, {"backend", daemon.backend}}, 1);
  for (const char* state : {"serving", "draining", "stopping"}) {
    out.Gauge("neuron_rtd_state",
              "1 for the daemon's serving state: serving, draining (running sessions go on, new "
              "ones are refused) or stopping.",
              {{"state", state}}, daemon.state == state ? 1 : 0);
  }
  out.Gauge("neuron_rtd_start_time_seconds", "When the daemon started, in Unix seconds.", {},
            static_cast<double>(daemon.start_time_unix_ms) / 1e3);
  out.Gauge("neuron_rtd_sessions", "Sessions open now.", {},
            static_cast<double>(daemon.sessions_live));
  out.Counter("neuron_rtd_sessions_opened_total", "Sessions opened.", {},
              static_cast<double>(daemon.sessions_opened));
  for (const auto& [reason, count] : daemon.sessions_ended) {
    out.Counter("neuron_rtd_sessions_ended_total",
                "Sessions ended, by reason: closed, client_died, killed, device_reset, "
                "attach_timeout, attach_failed, daemon_stopping, grant_revoked.",
                {{"reason", reason}}, static_cast<double>(count));
  }
  out.Counter("neuron_rtd_cpu_seconds_total", "CPU time of the daemon process.",
              {{"mode", "user"}}, daemon.cpu_user_seconds);
  out.Counter("neuron_rtd_cpu_seconds_total", "CPU time of the daemon process.",
              {{"mode", "system"}}, daemon.cpu_system_seconds);
  out.Gauge("neuron_rtd_resident_memory_bytes", "Resident memory of the daemon process.", {},
            static_cast<double>(daemon.resident_memory_bytes));

  const neuronrt::CacheInfo& cache = daemon.executables;
  out.Gauge("neuron_rtd_executable_cache_entries", "Executables in the daemon's cache.", {},
            static_cast<double>(cache.entries));
  out.Gauge("neuron_rtd_executable_cache_bytes",
            "Bytes charged to the executable cache (bodies plus a fixed overhead each).", {},
            static_cast<double>(cache.memory_bytes));
  out.Gauge("neuron_rtd_executable_cache_held_bytes",
            "Bytes of executables some live session holds (the rest may be evicted).", {},
            static_cast<double>(cache.held_bytes));
  out.Gauge("neuron_rtd_executable_cache_limit_bytes",
            "[executables] max_cache_bytes: the cache's limit.", {},
            static_cast<double>(cache.max_bytes));
  out.Counter("neuron_rtd_executable_cache_hits_total",
              "Executable loads answered from the cache.", {}, static_cast<double>(cache.hits));
  out.Counter("neuron_rtd_executable_cache_misses_total",
              "Executable loads that had to be decoded and prepared.", {},
              static_cast<double>(cache.misses));
  out.Counter("neuron_rtd_executable_cache_evictions_total",
              "Executables evicted from the cache to stay under its limit.", {},
              static_cast<double>(cache.evictions));
  const neuronrt::CompilerInfo& compiler = cache.compiler;
  out.Gauge("neuron_rtd_compiler_enabled",
            "1 when the compiler of hot graphs is on and usable.", {},
            compiler.enabled && compiler.unavailable.empty() ? 1 : 0);
  out.Counter("neuron_rtd_compiler_builds_total", "Graphs the compiler worker built, by outcome.",
              {{"outcome", "succeeded"}}, static_cast<double>(compiler.builds));
  out.Counter("neuron_rtd_compiler_builds_total", "Graphs the compiler worker built, by outcome.",
              {{"outcome", "failed"}}, static_cast<double>(compiler.failures));
  out.Counter("neuron_rtd_compiler_build_seconds_total", "Time the compiler worker spent building.",
              {}, compiler.build_seconds);
  out.Counter("neuron_rtd_compiler_disk_hits_total",
              "Compiled graphs found in the disk cache instead of built.", {},
              static_cast<double>(compiler.disk_hits));
  out.Gauge("neuron_rtd_compiler_queued_graphs", "Graphs waiting for the compiler worker.", {},
            static_cast<double>(compiler.queued));
  out.Gauge("neuron_rtd_compiler_disk_bytes", "Bytes of compiled graphs in the disk cache.", {},
            static_cast<double>(compiler.disk_bytes));

  out.Gauge("neuron_rtd_communicators", "Live communicators (process groups).", {},
            static_cast<double>(daemon.communicators_live));
  // Every kind and outcome from zero (a few series), so that rate() and the
  // alert on failures see them before the first collective.
  std::map<std::pair<std::string, std::string>, uint64_t> collectives;
  std::map<std::string, uint64_t> collective_bytes;
  for (const char* kind : {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                           "send", "barrier"}) {
    for (const char* outcome : {"completed", "failed"}) collectives[{kind, outcome}] = 0;
    collective_bytes[kind] = 0;
  }
  for (const neuronrt::CollectiveCount& count : daemon.collectives) {
    collectives[{count.kind, count.outcome}] = count.count;
    collective_bytes[count.kind] += count.bytes;
  }
  for (const auto& [kind_outcome, count] : collectives) {
    out.Counter("neuron_rtd_collectives_total",
                "Collectives run by the daemon (every rank's part counted once), by kind and "
                "outcome.",
                {{"kind", kind_outcome.first}, {"outcome", kind_outcome.second}},
                static_cast<double>(count));
  }
  for (const auto& [kind, bytes] : collective_bytes) {
    out.Counter("neuron_rtd_collective_bytes_total",
                "Bytes collectives wrote into their ranks' buffers.", {{"kind", kind}},
                static_cast<double>(bytes));
  }
}

}  // namespace

Labels PodLabelsOf(const CoreHolders& holders, uint32_t core) {
  const auto holder = holders.find(core);
  if (holder == holders.end()) return {};
  return {{"pod", holder->second.pod},
          {"namespace", holder->second.pod_namespace},
          {"container", holder->second.container}};
}

namespace {

void AddCores(const DaemonSnapshot& snapshot, Families& out) {
  const std::map<uint32_t, uint32_t> device_of = DeviceOfCore(snapshot.devices);
  for (const neuronrt::CoreStats& core : snapshot.stats.cores) {
    const auto device = device_of.find(core.core);
    Labels labels = {
        {"neuroncore", Str(core.core)},
        {"neuron_device_index", device == device_of.end() ? "" : Str(device->second)}};
    const Labels pod = PodLabelsOf(snapshot.core_holders, core.core);
    labels.insert(labels.end(), pod.begin(), pod.end());
    auto with = [&labels](Labels more) {
      Labels all = labels;
      all.insert(all.end(), more.begin(), more.end());
      return all;
    };
    out.Counter("neuron_core_busy_seconds_total",
                "Time the core's engines were busy: compute (launches, fills, collectives) and "
                "dma (copies). rate() gives utilization.",
                with({{"engine", "compute"}}), Seconds(core.compute_busy_ns));
    out.Counter("neuron_core_busy_seconds_total",
                "Time the core's engines were busy: compute (launches, fills, collectives) and "
                "dma (copies). rate() gives utilization.",
                with({{"engine", "dma"}}), Seconds(core.dma_busy_ns));
    out.Gauge("neuron_core_utilization_ratio",
              "Share of about the last second the compute engine was busy, 0 to 1.", labels,
              core.recent_compute_utilization);
    // The main kinds and outcomes are served from zero, so that rate() and
    // alerts see them before the first command; the others once they occur.
    std::map<std::pair<std::string, std::string>, uint64_t> commands;
    for (const char* kind : {"launch", "copy", "fill", "collective"}) {
      for (const char* outcome : {"completed", "failed"}) commands[{kind, outcome}] = 0;
    }
    for (const neuronrt::CommandCount& count : core.commands) {
      commands[{count.kind, count.outcome}] = count.count;
    }
    for (const auto& [kind_outcome, count] : commands) {
      out.Counter("neuron_core_commands_total",
                  "Commands the core ran, by kind (launch, copy, fill, wait, signal, collective, "
                  "marker, invalid) and outcome (completed, rejected, failed, timed_out, "
                  "abandoned).",
                  with({{"kind", kind_outcome.first}, {"outcome", kind_outcome.second}}),
                  static_cast<double>(count));
    }
    out.Histogram("neuron_core_execution_duration_seconds",
                  "How long each command took on its engine, start to end.", labels,
                  ExecutionDurationHistogram(core));
    out.Gauge("neuron_core_queued_commands",
              "Commands submitted to the core's streams and not yet started.", labels,
              static_cast<double>(core.queued_commands));
    out.Counter("neuron_core_host_executed_launches_total",
                "Launches run on the host CPU instead of the core (real Trainium: operators no "
                "compiler made into NEFFs); 0 on the simulator.",
                labels, static_cast<double>(core.host_executed_launches));
    out.Gauge("neuron_core_healthy", "0 once the core has failed (neuronctl health says why).",
              labels, snapshot.health.failed_cores.contains(core.core) ? 0 : 1);
  }
}

void AddDevices(const DaemonSnapshot& snapshot, Families& out) {
  std::map<uint32_t, const neuronrt::DeviceStats*> stats_of;
  for (const neuronrt::DeviceStats& stats : snapshot.stats.devices) {
    stats_of[stats.device_index] = &stats;
  }
  for (const neuronrt::DeviceInfo& device : snapshot.devices) {
    const Labels labels = {{"neuron_device_index", Str(device.index)}};
    out.Gauge("neuron_device_info", "A device's description (always 1).",
              {{"neuron_device_index", Str(device.index)},
               {"architecture", device.architecture},
               {"instance_type", device.instance_type},
               {"backend", device.backend},
               {"lnc", Str(device.logical_nc_config)},
               {"cores", Str(device.cores.size())},
               {"bus_id", device.bus_id}},
              1);
    out.Gauge("neuron_device_memory_total_bytes", "The device's HBM.", labels,
              static_cast<double>(device.hbm_total_bytes));
    const auto stats = stats_of.find(device.index);
    if (stats == stats_of.end()) continue;
    constexpr char kMemoryUsedHelp[] =
        "HBM in use, by category (tensors: what sessions allocated; model_code, constants, "
        "scratchpad: loaded programs', where the driver tells them apart; runtime: what the "
        "runtime below the daemon holds besides).";
    out.Gauge("neuron_device_memory_used_bytes", kMemoryUsedHelp,
              {{"neuron_device_index", Str(device.index)}, {"category", "tensors"}},
              static_cast<double>(stats->second->tensors_bytes));
    if (stats->second->runtime_bytes) {
      out.Gauge("neuron_device_memory_used_bytes", kMemoryUsedHelp,
                {{"neuron_device_index", Str(device.index)}, {"category", "runtime"}},
                static_cast<double>(*stats->second->runtime_bytes));
    }
    if (const auto& programs = stats->second->programs) {
      for (const auto& [category, bytes] :
           {std::pair{"model_code", programs->model_code},
            std::pair{"constants", programs->constants},
            std::pair{"scratchpad", programs->scratchpad}}) {
        out.Gauge("neuron_device_memory_used_bytes", kMemoryUsedHelp,
                  {{"neuron_device_index", Str(device.index)}, {"category", category}},
                  static_cast<double>(bytes));
      }
    }
    for (const auto& [type, count] :
         EccEvents(stats->second->ecc, /*neuron_monitor_types_only=*/false)) {
      out.Counter("neuron_device_hw_ecc_events_total",
                  "Error-correction events the driver counted since the device was last reset, "
                  "by event_type (neuron-monitor's names).",
                  {{"neuron_device_index", Str(device.index)}, {"event_type", type}},
                  static_cast<double>(count));
    }
    out.Gauge("neuron_device_memory_largest_free_bytes",
              "The largest allocation that could succeed now (fragmentation).", labels,
              static_cast<double>(stats->second->hbm_largest_free_bytes));
    out.Gauge("neuron_device_memory_allocations", "Live HBM allocations.", labels,
              static_cast<double>(stats->second->hbm_segments));
  }
}

void AddSessions(const DaemonSnapshot& snapshot, Families& out) {
  for (const neuronrt::SessionInfo& session : snapshot.sessions) {
    const Labels labels = {{"session_id", Str(session.session_id)},
                           {"pid", std::to_string(session.owner.pid)},
                           {"uid", Str(session.owner.uid)},
                           {"client", session.client_name}};
    auto with = [&labels](Labels more) {
      Labels all = labels;
      all.insert(all.end(), more.begin(), more.end());
      return all;
    };
    out.Counter("neuron_rtd_session_device_seconds_total",
                "Device time the session's commands took.", labels,
                Seconds(session.device_time_ns));
    out.Gauge("neuron_rtd_session_core_share_ratio",
              "The share of one core's time the session's commands took over about the last "
              "5 seconds.",
              labels, session.recent_core_share);
    out.Gauge("neuron_rtd_session_memory_used_bytes", "HBM the session holds.", labels,
              static_cast<double>(session.hbm_used_bytes));
    out.Counter("neuron_rtd_session_commands_total", "The session's commands, by outcome.",
                with({{"outcome", "completed"}}), static_cast<double>(session.commands_completed));
    out.Counter("neuron_rtd_session_commands_total", "The session's commands, by outcome.",
                with({{"outcome", "failed"}}), static_cast<double>(session.commands_failed));
    out.Gauge("neuron_rtd_session_queued_commands",
              "The session's commands submitted and not yet started.", labels,
              static_cast<double>(session.queued_commands));
  }
}

}  // namespace

std::vector<std::pair<std::string, uint64_t>> EccEvents(const neuronrt::EccCounts& ecc,
                                                        bool neuron_monitor_types_only) {
  std::vector<std::pair<std::string, uint64_t>> events;
  for (const auto& [type, count] :
       {std::pair{"mem_ecc_corrected", ecc.mem_corrected},
        std::pair{"mem_ecc_uncorrected", ecc.mem_uncorrected},
        std::pair{"sram_ecc_corrected", ecc.sram_corrected},
        std::pair{"sram_ecc_uncorrected", ecc.sram_uncorrected}}) {
    if (count) events.emplace_back(type, *count);
  }
  if (!neuron_monitor_types_only && ecc.mem_repairable_uncorrected) {
    events.emplace_back("mem_ecc_repairable_uncorrected", *ecc.mem_repairable_uncorrected);
  }
  return events;
}

HistogramSample ExecutionDurationHistogram(const neuronrt::CoreStats& core) {
  HistogramSample sample{.sum = Seconds(core.execution_ns_sum)};
  const std::vector<uint64_t>& log2 = core.execution_ns_log2_buckets;
  for (uint64_t count : log2) sample.count += count;
  // Bucket i holds times under 2^i ns: the count under 2^k is buckets 0..k.
  uint64_t cumulative = 0;
  size_t next = 0;
  for (int bound = kFirstBoundLog2; bound <= kLastBoundLog2; bound += kBoundStepLog2) {
    for (; next <= static_cast<size_t>(bound) && next < log2.size(); ++next) {
      cumulative += log2[next];
    }
    sample.buckets.emplace_back(std::ldexp(1.0, bound) / 1e9, cumulative);
  }
  sample.buckets.emplace_back(std::numeric_limits<double>::infinity(), sample.count);
  return sample;
}

void AddDaemonFamilies(const DaemonSnapshot& snapshot, const FamilyOptions& options,
                       Families& families) {
  AddDaemon(snapshot, families);
  AddCores(snapshot, families);
  AddDevices(snapshot, families);
  if (options.per_session) AddSessions(snapshot, families);
}

}  // namespace neuron_exporter

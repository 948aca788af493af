#include <algorithm>

#include "src/internal/proto_convert.h"

#include "absl/strings/str_format.h"

namespace neuronrt::internal {
namespace {

namespace v1 = neuron::rtd::v1;

std::string ArchitectureName(v1::Architecture architecture) {
  switch (architecture) {
    case v1::ARCHITECTURE_TRAINIUM2:
      return "trainium2";
    case v1::ARCHITECTURE_TRAINIUM3:
      return "trainium3";
    default:
      return "unknown";
  }
}

std::string BackendName(v1::BackendKind backend) {
  switch (backend) {
    case v1::BACKEND_KIND_SIM:
      return "sim";
    case v1::BACKEND_KIND_HARDWARE:
      return "hardware";
    default:
      return "unknown";
  }
}

}  // namespace

std::string StateName(v1::ServingState state) {
  switch (state) {
    case v1::SERVING_STATE_SERVING:
      return "serving";
    case v1::SERVING_STATE_DRAINING:
      return "draining";
    case v1::SERVING_STATE_STOPPING:
      return "stopping";
    default:
      return "unknown";
  }
}

DeviceInfo FromProto(const v1::DeviceInfo& device) {
  DeviceInfo info;
  info.index = device.index();
  info.instance_type = device.instance_type();
  info.architecture = ArchitectureName(device.architecture());
  info.backend = BackendName(device.backend());
  info.physical_cores = device.physical_cores();
  info.logical_nc_config = device.logical_nc_config();
  for (const v1::CoreInfo& core : device.cores()) info.cores.push_back(core.index());
  info.hbm_total_bytes = device.hbm_total_bytes();
  info.hbm_used_bytes = device.hbm_used_bytes();
  info.connected_devices.assign(device.connected_devices().begin(),
                                device.connected_devices().end());
  info.bus_id = device.bus_id();
  info.topology_source = device.topology_source();
  info.stream_priority_levels = std::max<uint32_t>(1, device.stream_priority_levels());
  for (const v1::CoreInfo& core : device.cores()) {
    if (!core.fault().empty()) info.core_faults[core.index()] = core.fault();
  }
  return info;
}

HealthInfo FromProto(const v1::HealthResponse& health) {
  HealthInfo info;
  info.state = StateName(health.state());
  info.daemon_version = health.daemon_version();
  info.daemon_pid = health.daemon_pid();
  info.uptime_ms = health.uptime_ms();
  info.backend = BackendName(health.backend());
  info.device_count = health.device_count();
  info.core_count = health.core_count();
  info.caller = PeerIdentity{.pid = health.caller().pid(),
                             .uid = health.caller().uid(),
                             .gid = health.caller().gid()};
  for (const v1::CoreInfo& core : health.failed_cores()) {
    info.failed_cores[core.index()] = core.fault();
  }
  info.compiler = FromProto(health.compiler());
  return info;
}

RuntimeInfo FromProto(const v1::GetRuntimeInfoResponse& response) {
  return RuntimeInfo{.daemon_version = response.daemon_version(),
                     .abi_version_major = response.abi_version_major(),
                     .abi_version_minor = response.abi_version_minor(),
                     .backend = BackendName(response.backend()),
                     .instance_id = response.instance_id(),
                     .fabric_address = response.fabric_address(),
                     .fabric_description = response.fabric_description()};
}

SessionInfo FromProto(const v1::SessionInfo& session) {
  SessionInfo info;
  info.session_id = session.session_id();
  info.owner = PeerIdentity{
      .pid = session.owner().pid(), .uid = session.owner().uid(), .gid = session.owner().gid()};
  info.client_name = session.client_name();
  info.cores.assign(session.cores().begin(), session.cores().end());
  info.hbm_used_bytes = session.hbm_used_bytes();
  info.stream_count = session.stream_count();
  info.commands_completed = session.commands_completed();
  info.commands_failed = session.commands_failed();
  info.opened_at_unix_ms = session.opened_at_unix_ms();
  info.executable_count = session.executable_count();
  info.share_weight = session.share_weight();
  info.device_time_ns = session.device_time_ns();
  info.recent_core_share = session.recent_core_share();
  info.queued_commands = session.queued_commands();
  return info;
}

CompilerInfo FromProto(const v1::CompilerInfo& compiler) {
  return CompilerInfo{.enabled = compiler.enabled(),
                      .compile_after_launches = compiler.compile_after_launches(),
                      .builds = compiler.builds(),
                      .failures = compiler.failures(),
                      .disk_hits = compiler.disk_hits(),
                      .queued = compiler.queued(),
                      .worker_starts = compiler.worker_starts(),
                      .build_seconds = compiler.build_seconds(),
                      .unavailable = compiler.unavailable(),
                      .ready = compiler.ready(),
                      .python = compiler.python(),
                      .worker_torch_version = compiler.worker_torch_version(),
                      .disk_entries = compiler.disk_entries()};
}

CacheInfo FromProto(const v1::GetCacheInfoResponse& cache) {
  CacheInfo info{.entries = cache.entries(),
                 .memory_bytes = cache.memory_bytes(),
                 .held_entries = cache.held_entries(),
                 .held_bytes = cache.held_bytes(),
                 .hits = cache.hits(),
                 .misses = cache.misses(),
                 .evictions = cache.evictions(),
                 .max_bytes = cache.max_bytes(),
                 .max_bytes_per_user = cache.max_bytes_per_user(),
                 .compiler = FromProto(cache.compiler())};
  info.compiler.disk_bytes = cache.disk_bytes();
  info.compiler.disk_path = cache.disk_path();
  for (const v1::CachedExecutable& executable : cache.executables()) {
    info.executables.push_back(CachedExecutable{
        .executable_id = executable.executable_id(),
        .name = executable.name(),
        .kind = executable.kind() == v1::EXECUTABLE_KIND_GRAPH  ? "graph"
                : executable.kind() == v1::EXECUTABLE_KIND_NEFF ? "neff"
                : executable.kind() == v1::EXECUTABLE_KIND_NKI  ? "nki"
                                                                : "eager_op",
        .bytes = executable.bytes(),
        .holders = executable.holders(),
        .launches = executable.launches(),
        .tier = executable.tier(),
        .compile_state = executable.compile_state(),
        .compile_seconds = executable.compile_seconds(),
        .host_threads = executable.host_threads(),
        .compile_key = executable.compile_key(),
        .disk_cache = executable.disk_cache()});
  }
  return info;
}

CoreStats FromProto(const v1::CoreStats& core) {
  CoreStats stats{.core = core.core(),
                  .utilization = core.utilization(),
                  .executions_completed = core.executions_completed(),
                  .executions_failed = core.executions_failed(),
                  .executions_timed_out = core.executions_timed_out(),
                  .busy_ns = core.busy_ns(),
                  .recent_compute_utilization = core.recent_compute_utilization(),
                  .host_executed_launches = core.host_executed_launches(),
                  .latency_p50_ns = core.execution_latency().p50_ns(),
                  .latency_p99_ns = core.execution_latency().p99_ns(),
                  .latency_max_ns = core.execution_latency().max_ns(),
                  .compute_busy_ns = core.compute_busy_ns(),
                  .dma_busy_ns = core.dma_busy_ns(),
                  .execution_ns_log2_buckets = {core.execution_ns_log2_buckets().begin(),
                                                core.execution_ns_log2_buckets().end()},
                  .execution_ns_sum = core.execution_ns_sum(),
                  .queued_commands = core.queued_commands()};
  for (const v1::CommandCount& count : core.commands()) {
    stats.commands.push_back(
        CommandCount{.kind = count.kind(), .outcome = count.outcome(), .count = count.count()});
  }
  return stats;
}

Stats FromProto(const v1::GetStatsResponse& response) {
  Stats stats{.interval_ms = response.interval_ms()};
  for (const v1::CoreStats& core : response.cores()) stats.cores.push_back(FromProto(core));
  for (const v1::DeviceStats& device : response.devices()) {
    DeviceStats& out = stats.devices.emplace_back(
        DeviceStats{.device_index = device.device_index(),
                    .tensors_bytes = device.memory().tensors_bytes(),
                    .hbm_total_bytes = device.hbm_total_bytes(),
                    .hbm_largest_free_bytes = device.hbm_largest_free_bytes(),
                    .hbm_segments = device.hbm_segments()});
    if (device.runtime_bytes_known()) out.runtime_bytes = device.memory().runtime_bytes();
    if (device.program_bytes_known()) {
      out.programs = DeviceStats::ProgramBytes{.model_code = device.memory().model_code_bytes(),
                                               .constants = device.memory().constants_bytes(),
                                               .scratchpad = device.memory().scratchpad_bytes()};
    }
    for (const v1::CoreMemoryUsage& core : device.core_memory()) {
      out.core_memory.push_back({.core = core.core(),
                                 .tensors = core.memory().tensors_bytes(),
                                 .model_code = core.memory().model_code_bytes(),
                                 .constants = core.memory().constants_bytes(),
                                 .scratchpad = core.memory().scratchpad_bytes(),
                                 .runtime = core.memory().runtime_bytes()});
    }
    const v1::EccCounts& ecc = device.ecc();
    if (ecc.has_mem_corrected()) out.ecc.mem_corrected = ecc.mem_corrected();
    if (ecc.has_mem_uncorrected()) out.ecc.mem_uncorrected = ecc.mem_uncorrected();
    if (ecc.has_mem_repairable_uncorrected()) {
      out.ecc.mem_repairable_uncorrected = ecc.mem_repairable_uncorrected();
    }
    if (ecc.has_sram_corrected()) out.ecc.sram_corrected = ecc.sram_corrected();
    if (ecc.has_sram_uncorrected()) out.ecc.sram_uncorrected = ecc.sram_uncorrected();
  }
  const v1::DaemonStats& daemon = response.daemon();
  DaemonStats& out = stats.daemon;
  out.version = daemon.version();
  out.backend = BackendName(daemon.backend());
  out.state = StateName(daemon.state());
  out.start_time_unix_ms = daemon.start_time_unix_ms();
  out.sessions_opened = daemon.sessions_opened();
  out.sessions_live = daemon.sessions_live();
  for (const v1::SessionEndCount& ended : daemon.sessions_ended()) {
    out.sessions_ended[ended.reason()] = ended.count();
  }
  out.executables = FromProto(daemon.executables());
  out.communicators_live = daemon.communicators_live();
  for (const v1::CollectiveCount& count : daemon.collectives()) {
    out.collectives.push_back(CollectiveCount{.kind = count.kind(),
                                              .outcome = count.outcome(),
                                              .count = count.count(),
                                              .bytes = count.bytes()});
  }
  out.cpu_user_seconds = daemon.cpu_user_seconds();
  out.cpu_system_seconds = daemon.cpu_system_seconds();
  out.resident_memory_bytes = daemon.resident_memory_bytes();
  return stats;
}

GrantInfo FromProto(const v1::GrantInfo& grant) {
  return GrantInfo{.grant_id = grant.grant_id(),
                   .cores = {grant.cores().begin(), grant.cores().end()},
                   .hbm_quota_bytes = grant.hbm_quota_bytes(),
                   .hbm_used_bytes = grant.hbm_used_bytes(),
                   .label = grant.label(),
                   .directory = grant.directory(),
                   .session_count = grant.session_count(),
                   .created_at_unix_ms = grant.created_at_unix_ms()};
}

absl::Status FromGrpc(const grpc::Status& status, const DaemonAddress& address,
                      std::string_view call) {
  if (status.ok()) return absl::OkStatus();
  const auto code = static_cast<absl::StatusCode>(status.error_code());
  if (code == absl::StatusCode::kUnavailable) {
    return absl::UnavailableError(absl::StrFormat("cannot reach neuron-rtd at %s (%s): %s",
                                                  address.target, address.origin,
                                                  status.error_message()));
  }
  return absl::Status(code, absl::StrFormat("neuron-rtd at %s: %s failed: %s", address.target,
                                            call, status.error_message()));
}

}  // namespace neuronrt::internal

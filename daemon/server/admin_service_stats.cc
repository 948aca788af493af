// Admin.GetStats and Admin.GetCacheInfo: the daemon's counters, for
// neuronctl stats/top and the Prometheus exporter.
#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/time/time.h"
#include "daemon/common/process_usage.h"
#include "daemon/compiler/cache_miss.h"
#include "daemon/server/admin_service.h"
#include "daemon/server/device_proto.h"
#include "daemon/server/grpc_status.h"
#include "neuron/rtd/abi/command_ring.h"
#include "neuron/version.h"

namespace neuron::rtd {

namespace {

// Percentiles from a log2 histogram: the upper bound of the bucket where the
// cumulative count reaches the fraction.
void Summarize(const std::array<uint64_t, 64>& buckets, v1::LatencySummary* out) {
  uint64_t count = 0;
  for (uint64_t bucket : buckets) count += bucket;
  out->set_count(count);
  if (count == 0) return;
  auto percentile = [&](double fraction) -> uint64_t {
    const uint64_t target = std::max<uint64_t>(1, static_cast<uint64_t>(fraction * count));
    uint64_t seen = 0;
    for (size_t i = 0; i < buckets.size(); ++i) {
      seen += buckets[i];
      if (seen >= target) return i == 0 ? 0 : (uint64_t{1} << (i - 1)) * 2 - 1;
    }
    return UINT64_MAX;
  };
  out->set_p50_ns(percentile(0.50));
  out->set_p90_ns(percentile(0.90));
  out->set_p99_ns(percentile(0.99));
  out->set_max_ns(percentile(1.0));
}

}  // namespace

grpc::Status AdminService::GetStats(grpc::ServerContext* context, const v1::GetStatsRequest*,
                                    v1::GetStatsResponse* response) {
  // Through a grant's socket: its cores and their devices; of the daemon,
  // what it is, not what other tenants do.
  absl::StatusOr<std::shared_ptr<session::Grant>> grant = GrantOfCaller(context);
  if (!grant.ok()) return ToGrpc(grant.status());
  auto granted = [&](uint32_t core) { return *grant == nullptr || (*grant)->HasCore(core); };
  const uint64_t interval_ns =
      std::max<uint64_t>(1, absl::ToInt64Nanoseconds(status_.uptime()));
  response->set_interval_ms(interval_ns / 1'000'000);
  for (const auto& [core, stats] : scheduler_.Stats()) {
    if (granted(core)) FillCoreStats(core, stats, interval_ns, response->add_cores());
  }
  for (const hal::Device* device : backend_.devices()) {
    const hal::DeviceInfo& info = device->info();
    bool has_granted_core = false;
    for (uint32_t core = 0; core < info.logical_cores(); ++core) {
      has_granted_core |= granted(info.first_core_index + core);
    }
    if (!has_granted_core) continue;
    const memory::AllocatorStats memory = memory_.stats(device->info().index);
    v1::DeviceStats* out = response->add_devices();
    out->set_device_index(device->info().index);
    out->mutable_memory()->set_tensors_bytes(memory.used_bytes);
    out->set_hbm_total_bytes(memory.total_bytes);
    out->set_hbm_largest_free_bytes(memory.largest_free_bytes);
    out->set_hbm_segments(memory.segments);
    const hal::DeviceTelemetry telemetry = device->Telemetry();
    if (telemetry.runtime_hbm_bytes) {
      out->set_runtime_bytes_known(true);
      out->mutable_memory()->set_runtime_bytes(*telemetry.runtime_hbm_bytes);
    }
    if (telemetry.programs) {
      out->set_program_bytes_known(true);
      out->mutable_memory()->set_model_code_bytes(telemetry.programs->model_code_bytes);
      out->mutable_memory()->set_constants_bytes(telemetry.programs->constants_bytes);
      out->mutable_memory()->set_scratchpad_bytes(telemetry.programs->scratchpad_bytes);
    }
    for (size_t core = 0; core < telemetry.core_hbm.size(); ++core) {
      const uint32_t index = info.first_core_index + static_cast<uint32_t>(core);
      if (!granted(index)) continue;
      const hal::CoreHbm& hbm = telemetry.core_hbm[core];
      v1::CoreMemoryUsage* usage = out->add_core_memory();
      usage->set_core(index);
      usage->mutable_memory()->set_tensors_bytes(hbm.tensors_bytes);
      usage->mutable_memory()->set_model_code_bytes(hbm.model_code_bytes);
      usage->mutable_memory()->set_constants_bytes(hbm.constants_bytes);
      usage->mutable_memory()->set_scratchpad_bytes(hbm.scratchpad_bytes);
      usage->mutable_memory()->set_runtime_bytes(hbm.runtime_bytes);
    }
    const hal::EccCounts& ecc = telemetry.ecc;
    if (ecc.mem_corrected || ecc.mem_uncorrected || ecc.mem_repairable_uncorrected ||
        ecc.sram_corrected || ecc.sram_uncorrected) {
      v1::EccCounts* counts = out->mutable_ecc();
      if (ecc.mem_corrected) counts->set_mem_corrected(*ecc.mem_corrected);
      if (ecc.mem_uncorrected) counts->set_mem_uncorrected(*ecc.mem_uncorrected);
      if (ecc.mem_repairable_uncorrected) {
        counts->set_mem_repairable_uncorrected(*ecc.mem_repairable_uncorrected);
      }
      if (ecc.sram_corrected) counts->set_sram_corrected(*ecc.sram_corrected);
      if (ecc.sram_uncorrected) counts->set_sram_uncorrected(*ecc.sram_uncorrected);
    }
  }
  if (*grant == nullptr) {
    FillDaemonStats(response->mutable_daemon());
  } else {
    v1::DaemonStats* daemon = response->mutable_daemon();
    daemon->set_version(NEURON_RTD_VERSION);
    daemon->set_backend(ToProto(backend_.kind()));
    daemon->set_state(status_.state());
    daemon->set_start_time_unix_ms(absl::ToUnixMillis(status_.started()));
  }
  return grpc::Status::OK;
}

void AdminService::FillCoreStats(uint32_t core, const queue::CoreQueue::Stats& stats,
                                 uint64_t interval_ns, v1::CoreStats* out) const {
  const queue::CoreCounters::Snapshot& counters = stats.counters;
  out->set_core(core);
  out->set_utilization(static_cast<double>(counters.busy_total_ns()) /
                       static_cast<double>(interval_ns));
  out->set_executions_completed(counters.CountWithOutcome(queue::CommandOutcome::kCompleted));
  out->set_executions_failed(counters.CountWithOutcome(queue::CommandOutcome::kRejected) +
                             counters.CountWithOutcome(queue::CommandOutcome::kFailed));
  out->set_executions_timed_out(counters.CountWithOutcome(queue::CommandOutcome::kTimedOut));
  out->set_busy_ns(counters.busy_total_ns());
  out->set_compute_busy_ns(counters.busy_ns[static_cast<size_t>(queue::CoreEngine::kCompute)]);
  out->set_dma_busy_ns(counters.busy_ns[static_cast<size_t>(queue::CoreEngine::kDma)]);
  out->set_recent_compute_utilization(stats.recent_compute_utilization);
  out->set_queued_commands(stats.queued_commands);
  if (absl::StatusOr<hal::Device*> device = scheduler_.DeviceOfCore(core); device.ok()) {
    out->set_host_executed_launches(
        (*device)->HostExecutedLaunches(core - (*device)->info().first_core_index));
  }
  Summarize(counters.execution_log2_ns, out->mutable_execution_latency());
  for (uint64_t bucket : counters.execution_log2_ns) out->add_execution_ns_log2_buckets(bucket);
  out->set_execution_ns_sum(counters.execution_ns_sum);
  for (uint16_t opcode = 0; opcode < counters.commands.size(); ++opcode) {
    for (size_t outcome = 0; outcome < queue::kCommandOutcomes; ++outcome) {
      const uint64_t count = counters.commands[opcode][outcome];
      if (count == 0) continue;
      v1::CommandCount* commands = out->add_commands();
      commands->set_kind(absl::AsciiStrToLower(neuron_rtd_opcode_name(opcode)));
      commands->set_outcome(
          std::string(queue::CommandOutcomeName(static_cast<queue::CommandOutcome>(outcome))));
      commands->set_count(count);
    }
  }
}

void AdminService::FillDaemonStats(v1::DaemonStats* out) const {
  out->set_version(NEURON_RTD_VERSION);
  out->set_backend(ToProto(backend_.kind()));
  out->set_state(status_.state());
  out->set_start_time_unix_ms(absl::ToUnixMillis(status_.started()));
  const session::SessionCounts sessions = sessions_.counts();
  out->set_sessions_opened(sessions.opened);
  out->set_sessions_live(sessions.live);
  for (size_t reason = 0; reason < session::kSessionEndReasons; ++reason) {
    v1::SessionEndCount* ended = out->add_sessions_ended();
    ended->set_reason(
        std::string(session::SessionEndName(static_cast<session::SessionEnd>(reason))));
    ended->set_count(sessions.ended[reason]);
  }
  FillCacheInfo(/*list_executables=*/false, out->mutable_executables());
  out->set_communicators_live(communicators_.List().size());
  const collectives::CollectiveCounters::Snapshot collectives = communicators_.counters();
  for (uint32_t kind = 1; kind < collectives.size(); ++kind) {
    const std::string name = absl::AsciiStrToLower(std::string(collectives::CollectiveKindName(kind)));
    for (const bool ok : {true, false}) {
      const uint64_t count = ok ? collectives[kind].completed : collectives[kind].failed;
      if (count == 0) continue;
      v1::CollectiveCount* entry = out->add_collectives();
      entry->set_kind(name);
      entry->set_outcome(ok ? "completed" : "failed");
      entry->set_count(count);
      if (ok) entry->set_bytes(collectives[kind].bytes);
    }
  }
  const ProcessUsage usage = ReadProcessUsage();
  out->set_cpu_user_seconds(usage.cpu_user_seconds);
  out->set_cpu_system_seconds(usage.cpu_system_seconds);
  out->set_resident_memory_bytes(usage.resident_memory_bytes);
}

void AdminService::FillCompilerInfo(v1::CompilerInfo* out) const {
  out->set_enabled(compiler_ != nullptr);
  if (compiler_ == nullptr) return;
  const compiler::CompileStats built = compiler_->stats();
  out->set_compile_after_launches(compiler_->compile_after_launches());
  out->set_builds(built.builds);
  out->set_failures(built.failures);
  out->set_disk_hits(built.cache_hits);
  out->set_queued(built.queued);
  out->set_worker_starts(built.worker_starts);
  out->set_build_seconds(built.build_seconds);
  out->set_unavailable(built.unavailable);
  out->set_ready(built.ready);
  out->set_python(built.python);
  out->set_worker_torch_version(built.worker_torch_version);
}

void AdminService::FillCacheInfo(bool list_executables,
                                 v1::GetCacheInfoResponse* response) const {
  const exec::CacheStats stats = executables_.stats();
  response->set_entries(stats.entries);
  response->set_memory_bytes(stats.memory_bytes);
  response->set_hits(stats.hits);
  response->set_misses(stats.misses);
  response->set_held_entries(stats.held_entries);
  response->set_held_bytes(stats.held_bytes);
  response->set_evictions(stats.evictions);
  response->set_max_bytes(stats.limits.max_bytes);
  response->set_max_bytes_per_user(stats.limits.max_bytes_per_user);
  v1::CompilerInfo* compiler = response->mutable_compiler();
  FillCompilerInfo(compiler);
  std::vector<compiler::StoredArtifact> stored;
  if (compiler_ != nullptr) {
    stored = compiler_->cache().List();
    uint64_t disk_bytes = 0;
    for (const compiler::StoredArtifact& artifact : stored) disk_bytes += artifact.bytes;
    compiler->set_disk_entries(stored.size());
    response->set_disk_bytes(disk_bytes);
    response->set_disk_path(compiler_->cache().directory());
  }
  if (!list_executables) return;
  for (const exec::ExecutableCache::Listing& listed : executables_.List()) {
    const exec::Executable& executable = *listed.executable;
    const hal::ExecutableStatus status = executable.prepared->status();
    v1::CachedExecutable* entry = response->add_executables();
    entry->set_executable_id(executable.id);
    entry->set_name(executable.name);
    v1::ExecutableKind kind = v1::EXECUTABLE_KIND_EAGER_OP;
    if (std::holds_alternative<hal::GraphPlan>(executable.spec)) kind = v1::EXECUTABLE_KIND_GRAPH;
    if (std::holds_alternative<hal::NeffPlan>(executable.spec)) kind = v1::EXECUTABLE_KIND_NEFF;
    if (std::holds_alternative<hal::NkiKernelPlan>(executable.spec)) kind = v1::EXECUTABLE_KIND_NKI;
    entry->set_kind(kind);
    entry->set_bytes(listed.charged_bytes);
    entry->set_holders(listed.holders);
    entry->set_launches(status.launches);
    entry->set_tier(static_cast<uint32_t>(status.tier));
    entry->set_compile_state(status.compile_state);
    entry->set_compile_seconds(status.compile_seconds);
    entry->set_host_threads(static_cast<uint32_t>(status.host_threads));
    if (const auto* graph = std::get_if<hal::GraphPlan>(&executable.spec);
        graph != nullptr && compiler_ != nullptr) {
      const compiler::CompileKey key = compiler_->KeyOf(*graph);
      entry->set_compile_key(key.Digest());
      entry->set_disk_cache(compiler::ExplainCacheLookup(key, executable.name, stored));
    }
  }
}



grpc::Status AdminService::GetCacheInfo(grpc::ServerContext* context,
                                        const v1::GetCacheInfoRequest* request,
                                        v1::GetCacheInfoResponse* response) {
  // The cache is the host's: its executables' names are other tenants'.
  if (grpc::Status allowed = RefuseThroughGrant(context, "look at the executable cache");
      !allowed.ok()) {
    return allowed;
  }
  FillCacheInfo(request->list_executables(), response);
  return grpc::Status::OK;
}

}  // namespace neuron::rtd

#include "daemon/server/admin_service.h"

#include <unistd.h>

#include "absl/time/time.h"
#include "absl/strings/str_format.h"
#include "daemon/config/config.h"
#include "daemon/server/device_proto.h"
#include "daemon/server/grpc_status.h"
#include "neuron/rtd/abi/command_ring.h"
#include "neuron/version.h"

namespace neuron::rtd {

grpc::Status AdminService::Health(grpc::ServerContext* context, const v1::HealthRequest*,
                                  v1::HealthResponse* response) {
  response->set_state(status_.state());
  response->set_daemon_version(NEURON_RTD_VERSION);
  response->set_daemon_pid(::getpid());
  response->set_uptime_ms(absl::ToInt64Milliseconds(status_.uptime()));
  response->set_backend(ToProto(backend_.kind()));
  response->set_device_count(static_cast<uint32_t>(backend_.devices().size()));
  response->set_core_count(backend_.total_logical_cores());
  for (const hal::Device* device : backend_.devices()) {
    for (uint32_t core = 0; core < device->info().logical_cores(); ++core) {
      std::string fault = device->CoreFault(core);
      if (fault.empty()) continue;
      v1::CoreInfo* failed = response->add_failed_cores();
      failed->set_index(device->info().first_core_index + core);
      failed->set_device_index(device->info().index);
      failed->set_physical_cores(device->info().logical_nc_config);
      failed->set_fault(std::move(fault));
    }
  }
  if (std::optional<PeerCredentials> caller = peers_.Lookup(context->peer())) {
    response->mutable_caller()->set_pid(caller->pid);
    response->mutable_caller()->set_uid(caller->uid);
    response->mutable_caller()->set_gid(caller->gid);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::ListDevices(grpc::ServerContext*, const v1::AdminListDevicesRequest*,
                                       v1::AdminListDevicesResponse* response) {
  DevicesToProto(backend_, memory_, response->mutable_devices());
  return grpc::Status::OK;
}

grpc::Status AdminService::ListSessions(grpc::ServerContext*, const v1::ListSessionsRequest*,
                                        v1::ListSessionsResponse* response) {
  for (const std::shared_ptr<session::Session>& session : sessions_.List()) {
    const session::SessionStats stats = session->stats();
    v1::SessionInfo* info = response->add_sessions();
    info->set_session_id(session->id());
    info->mutable_owner()->set_pid(session->owner().pid);
    info->mutable_owner()->set_uid(session->owner().uid);
    info->mutable_owner()->set_gid(session->owner().gid);
    info->set_client_name(session->client_name());
    for (uint32_t core : session->cores()) info->add_cores(core);
    info->set_hbm_used_bytes(stats.hbm_bytes);
    info->set_stream_count(stats.streams);
    info->set_commands_completed(stats.commands_completed);
    info->set_commands_failed(stats.commands_failed);
    info->set_opened_at_unix_ms(absl::ToUnixMillis(session->opened_at()));
    info->set_executable_count(stats.executables);
    info->set_share_weight(stats.share_weight);
    info->set_device_time_ns(stats.device_time_ns);
    info->set_recent_core_share(stats.recent_share);
    info->set_queued_commands(stats.queued_commands);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::ListCommunicators(grpc::ServerContext*,
                                             const v1::ListCommunicatorsRequest*,
                                             v1::ListCommunicatorsResponse* response) {
  for (const collectives::Communicator::Info& each : communicators_.List()) {
    v1::CommunicatorInfo* info = response->add_communicators();
    info->set_name(each.name);
    info->set_size(each.size);
    for (const std::string& member : each.members) info->add_members(member);
    info->set_collectives_completed(each.collectives_completed);
    info->set_operations_pending(each.operations_pending);
    info->set_aborted(each.aborted);
  }
  return grpc::Status::OK;
}

absl::StatusOr<PeerCredentials> AdminService::Caller(grpc::ServerContext* context) const {
  std::optional<PeerCredentials> caller = peers_.Lookup(context->peer());
  if (!caller) return absl::UnauthenticatedError("the daemon cannot identify this connection's peer");
  return *caller;
}

grpc::Status AdminService::KillSession(grpc::ServerContext* context,
                                       const v1::KillSessionRequest* request,
                                       v1::KillSessionResponse*) {
  absl::StatusOr<PeerCredentials> caller = Caller(context);
  if (!caller.ok()) return ToGrpc(caller.status());
  const std::string reason =
      absl::StrFormat("killed by uid %d (pid %d)%s%s", caller->uid, caller->pid,
                      request->reason().empty() ? "" : ": ", request->reason().substr(0, 256));
  return ToGrpc(sessions_.Close(request->session_id(), *caller, NEURON_RTD_STATUS_CLOSED, reason));
}

grpc::Status AdminService::SetSessionWeight(grpc::ServerContext* context,
                                            const v1::SetSessionWeightRequest* request,
                                            v1::SetSessionWeightResponse*) {
  absl::StatusOr<PeerCredentials> caller = Caller(context);
  if (!caller.ok()) return ToGrpc(caller.status());
  if (request->weight() < 1 || request->weight() > kMaxShareWeight) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrFormat("weight %d is not between 1 and %d", request->weight(),
                                        kMaxShareWeight));
  }
  absl::StatusOr<std::shared_ptr<session::Session>> session =
      sessions_.Get(request->session_id(), *caller);
  if (!session.ok()) return ToGrpc(session.status());
  (*session)->set_share_weight(request->weight());
  return grpc::Status::OK;
}

grpc::Status AdminService::CheckAdministrator(grpc::ServerContext* context,
                                              std::string_view action) const {
  absl::StatusOr<PeerCredentials> caller = Caller(context);
  if (!caller.ok()) return ToGrpc(caller.status());
  if (caller->uid != 0 && caller->uid != ::geteuid()) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrFormat("only root or uid %d may %s; the caller is uid %d",
                                        ::geteuid(), action, caller->uid));
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::Drain(grpc::ServerContext* context, const v1::DrainRequest* request,
                                 v1::DrainResponse* response) {
  if (grpc::Status allowed = CheckAdministrator(context, "drain the daemon"); !allowed.ok()) {
    return allowed;
  }
  sessions_.SetDraining(request->enable());
  if (status_.state() != v1::SERVING_STATE_STOPPING) {
    status_.set_state(request->enable() ? v1::SERVING_STATE_DRAINING : v1::SERVING_STATE_SERVING);
  }
  response->set_state(status_.state());
  return grpc::Status::OK;
}

grpc::Status AdminService::ResetDevice(grpc::ServerContext* context,
                                       const v1::ResetDeviceRequest* request,
                                       v1::ResetDeviceResponse* response) {
  if (grpc::Status allowed = CheckAdministrator(context, "reset a device"); !allowed.ok()) {
    return allowed;
  }
  if (request->device_index() >= backend_.devices().size()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrFormat("no device %d: this host has %d", request->device_index(),
                                        backend_.devices().size()));
  }
  // Ending the sessions that use the device frees what they held; the
  // backend then clears what is left (on real Trainium, its loaded programs
  // and failed cores). A backend that must start its runtime again ends
  // every session, with new ones refused meanwhile.
  const uint32_t index = request->device_index();
  const bool whole_host = backend_.ResetEndsEverySession(index);
  const bool was_draining = sessions_.draining();
  if (whole_host) sessions_.SetDraining(true);
  for (const hal::Device* device : backend_.devices()) {
    const uint32_t each = device->info().index;
    if (each != index && !whole_host) continue;
    for (uint64_t id : sessions_.CloseSessionsOnDevice(
             each, NEURON_RTD_STATUS_CLOSED,
             whole_host ? absl::StrFormat("the Neuron runtime was restarted to reset device %d",
                                          index)
                        : absl::StrFormat("device %d was reset by an administrator", index))) {
      response->add_failed_sessions(id);
    }
  }
  absl::Status reset = backend_.devices()[index]->Reset();
  if (whole_host && !was_draining) sessions_.SetDraining(false);
  if (!reset.ok()) {
    return ToGrpc(absl::Status(reset.code(),
                               absl::StrFormat("resetting device %d: %s", index, reset.message())));
  }
  return grpc::Status::OK;
}

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

grpc::Status AdminService::GetStats(grpc::ServerContext*, const v1::GetStatsRequest*,
                                    v1::GetStatsResponse* response) {
  const uint64_t interval_ns =
      std::max<uint64_t>(1, absl::ToInt64Nanoseconds(status_.uptime()));
  response->set_interval_ms(interval_ns / 1'000'000);
  for (const auto& [core, stats] : scheduler_.Stats()) {
    v1::CoreStats* out = response->add_cores();
    out->set_core(core);
    out->set_utilization(static_cast<double>(stats.busy_ns) / static_cast<double>(interval_ns));
    out->set_executions_completed(stats.completed);
    out->set_executions_failed(stats.failed);
    out->set_busy_ns(stats.busy_ns);
    out->set_recent_compute_utilization(stats.recent_compute_utilization);
    if (absl::StatusOr<hal::Device*> device = scheduler_.DeviceOfCore(core); device.ok()) {
      out->set_host_executed_launches(
          (*device)->HostExecutedLaunches(core - (*device)->info().first_core_index));
    }
    Summarize(stats.latency_log2_ns, out->mutable_execution_latency());
  }
  for (const hal::Device* device : backend_.devices()) {
    v1::DeviceStats* out = response->add_devices();
    out->set_device_index(device->info().index);
    out->mutable_memory()->set_tensors_bytes(memory_.stats(device->info().index).used_bytes);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::GetCacheInfo(grpc::ServerContext*,
                                        const v1::GetCacheInfoRequest* request,
                                        v1::GetCacheInfoResponse* response) {
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
  compiler->set_enabled(compiler_ != nullptr);
  if (compiler_ != nullptr) {
    const compiler::CompileStats built = compiler_->stats();
    compiler->set_compile_after_launches(compiler_->compile_after_launches());
    compiler->set_builds(built.builds);
    compiler->set_failures(built.failures);
    compiler->set_disk_hits(built.cache_hits);
    compiler->set_queued(built.queued);
    compiler->set_worker_starts(built.worker_starts);
    compiler->set_build_seconds(built.build_seconds);
    compiler->set_unavailable(built.unavailable);
    const std::vector<compiler::StoredArtifact> stored = compiler_->cache().List();
    uint64_t disk_bytes = 0;
    for (const compiler::StoredArtifact& artifact : stored) disk_bytes += artifact.bytes;
    compiler->set_disk_entries(stored.size());
    response->set_disk_bytes(disk_bytes);
    response->set_disk_path(compiler_->cache().directory());
  }
  if (!request->list_executables()) return grpc::Status::OK;
  for (const exec::ExecutableCache::Listing& listed : executables_.List()) {
    const exec::Executable& executable = *listed.executable;
    const hal::ExecutableStatus status = executable.prepared->status();
    v1::CachedExecutable* entry = response->add_executables();
    entry->set_executable_id(executable.id);
    entry->set_name(executable.name);
    v1::ExecutableKind kind = v1::EXECUTABLE_KIND_EAGER_OP;
    if (std::holds_alternative<hal::GraphPlan>(executable.spec)) kind = v1::EXECUTABLE_KIND_GRAPH;
    if (std::holds_alternative<hal::NeffPlan>(executable.spec)) kind = v1::EXECUTABLE_KIND_NEFF;
    entry->set_kind(kind);
    entry->set_bytes(listed.charged_bytes);
    entry->set_holders(listed.holders);
    entry->set_launches(status.launches);
    entry->set_tier(static_cast<uint32_t>(status.tier));
    entry->set_compile_state(status.compile_state);
    entry->set_compile_seconds(status.compile_seconds);
    entry->set_host_threads(static_cast<uint32_t>(status.host_threads));
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::ClearCache(grpc::ServerContext* context,
                                      const v1::ClearCacheRequest* request,
                                      v1::ClearCacheResponse* response) {
  if (grpc::Status allowed = CheckAdministrator(context, "clear the executable cache");
      !allowed.ok()) {
    return allowed;
  }
  response->set_entries_removed(executables_.EvictUnheld());
  if (request->include_disk() && compiler_ != nullptr) {
    response->set_disk_entries_removed(compiler_->cache().Clear());
  }
  return grpc::Status::OK;
}

}  // namespace neuron::rtd

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
  FillCompilerInfo(response->mutable_compiler());
  if (std::optional<PeerCredentials> caller = peers_.Lookup(context->peer())) {
    response->mutable_caller()->set_pid(caller->pid);
    response->mutable_caller()->set_uid(caller->uid);
    response->mutable_caller()->set_gid(caller->gid);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::ListDevices(grpc::ServerContext* context,
                                       const v1::AdminListDevicesRequest*,
                                       v1::AdminListDevicesResponse* response) {
  absl::StatusOr<std::shared_ptr<session::Grant>> grant = GrantOfCaller(context);
  if (!grant.ok()) return ToGrpc(grant.status());
  DevicesToProto(backend_, memory_, response->mutable_devices());
  if (*grant != nullptr) KeepGrantedCores(**grant, response->mutable_devices());
  return grpc::Status::OK;
}

grpc::Status AdminService::ListSessions(grpc::ServerContext* context,
                                        const v1::ListSessionsRequest*,
                                        v1::ListSessionsResponse* response) {
  absl::StatusOr<std::shared_ptr<session::Grant>> grant = GrantOfCaller(context);
  if (!grant.ok()) return ToGrpc(grant.status());
  for (const std::shared_ptr<session::Session>& session : sessions_.List()) {
    if (*grant != nullptr && session->owner().grant != (*grant)->id()) continue;
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

grpc::Status AdminService::ListCommunicators(grpc::ServerContext* context,
                                             const v1::ListCommunicatorsRequest*,
                                             v1::ListCommunicatorsResponse* response) {
  if (grpc::Status allowed = RefuseThroughGrant(context, "list the host's communicators");
      !allowed.ok()) {
    return allowed;
  }
  for (const collectives::Communicator::Info& each : communicators_.List()) {
    v1::CommunicatorInfo* info = response->add_communicators();
    info->set_name(each.name);
    info->set_size(each.size);
    for (const std::string& member : each.members) info->add_members(member);
    info->set_collectives_completed(each.collectives_completed);
    info->set_operations_pending(each.operations_pending);
    info->set_aborted(each.aborted);
    info->set_hosts(each.hosts);
    info->set_host(each.host);
  }
  return grpc::Status::OK;
}

absl::StatusOr<PeerCredentials> AdminService::Caller(grpc::ServerContext* context) const {
  std::optional<PeerCredentials> caller = peers_.Lookup(context->peer());
  if (!caller) return absl::UnauthenticatedError("the daemon cannot identify this connection's peer");
  return *caller;
}

grpc::Status AdminService::RefuseThroughGrant(grpc::ServerContext* context,
                                              std::string_view action) const {
  absl::StatusOr<PeerCredentials> caller = Caller(context);
  if (!caller.ok()) return ToGrpc(caller.status());
  if (caller->grant.empty()) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                      absl::StrFormat("through grant %s's socket the Admin service is read-only "
                                      "and limited to the grant: it may not %s",
                                      caller->grant, action));
}

absl::StatusOr<std::shared_ptr<session::Grant>> AdminService::GrantOfCaller(
    grpc::ServerContext* context) const {
  absl::StatusOr<PeerCredentials> caller = Caller(context);
  if (!caller.ok()) return caller.status();
  return grants_.OfPeer(*caller);
}

grpc::Status AdminService::KillSession(grpc::ServerContext* context,
                                       const v1::KillSessionRequest* request,
                                       v1::KillSessionResponse*) {
  if (grpc::Status allowed = RefuseThroughGrant(context, "kill sessions"); !allowed.ok()) {
    return allowed;
  }
  absl::StatusOr<PeerCredentials> caller = Caller(context);
  if (!caller.ok()) return ToGrpc(caller.status());
  const std::string reason =
      absl::StrFormat("killed by uid %d (pid %d)%s%s", caller->uid, caller->pid,
                      request->reason().empty() ? "" : ": ", request->reason().substr(0, 256));
  return ToGrpc(sessions_.Close(request->session_id(), *caller, session::SessionEnd::kKilled,
                                NEURON_RTD_STATUS_CLOSED, reason));
}

grpc::Status AdminService::SetSessionWeight(grpc::ServerContext* context,
                                            const v1::SetSessionWeightRequest* request,
                                            v1::SetSessionWeightResponse*) {
  if (grpc::Status allowed = RefuseThroughGrant(context, "set sessions' weights");
      !allowed.ok()) {
    return allowed;
  }
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
  if (grpc::Status allowed = RefuseThroughGrant(context, action); !allowed.ok()) return allowed;
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

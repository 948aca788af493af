#include "daemon/server/admin_service.h"

#include <unistd.h>

#include "absl/time/time.h"
#include "absl/strings/str_format.h"
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
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::KillSession(grpc::ServerContext* context,
                                       const v1::KillSessionRequest* request,
                                       v1::KillSessionResponse*) {
  std::optional<PeerCredentials> caller = peers_.Lookup(context->peer());
  if (!caller) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "the daemon cannot identify this connection's peer");
  }
  const std::string reason =
      absl::StrFormat("killed by uid %d (pid %d)%s%s", caller->uid, caller->pid,
                      request->reason().empty() ? "" : ": ", request->reason().substr(0, 256));
  return ToGrpc(sessions_.Close(request->session_id(), *caller, NEURON_RTD_STATUS_CLOSED, reason));
}

}  // namespace neuron::rtd

namespace neuron::rtd {

grpc::Status AdminService::GetCacheInfo(grpc::ServerContext*, const v1::GetCacheInfoRequest*,
                                        v1::GetCacheInfoResponse* response) {
  const exec::CacheStats stats = executables_.stats();
  response->set_entries(stats.entries);
  response->set_memory_bytes(stats.memory_bytes);
  response->set_hits(stats.hits);
  response->set_misses(stats.misses);
  return grpc::Status::OK;
}

}  // namespace neuron::rtd

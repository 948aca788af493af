#include "daemon/server/admin_service.h"

#include <unistd.h>

#include "absl/time/time.h"
#include "daemon/server/device_proto.h"
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
  DevicesToProto(backend_, response->mutable_devices());
  return grpc::Status::OK;
}

}  // namespace neuron::rtd

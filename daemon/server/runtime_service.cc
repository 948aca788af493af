#include "daemon/server/runtime_service.h"

#include "daemon/server/device_proto.h"
#include "neuron/rtd/abi/command_ring.h"
#include "neuron/version.h"

namespace neuron::rtd {

grpc::Status RuntimeService::GetRuntimeInfo(grpc::ServerContext*, const v1::GetRuntimeInfoRequest*,
                                            v1::GetRuntimeInfoResponse* response) {
  response->set_daemon_version(NEURON_RTD_VERSION);
  response->set_abi_version_major(NEURON_RTD_ABI_VERSION_MAJOR);
  response->set_abi_version_minor(NEURON_RTD_ABI_VERSION_MINOR);
  response->set_backend(ToProto(backend_.kind()));
  return grpc::Status::OK;
}

grpc::Status RuntimeService::ListDevices(grpc::ServerContext*, const v1::ListDevicesRequest*,
                                         v1::ListDevicesResponse* response) {
  DevicesToProto(backend_, response->mutable_devices());
  return grpc::Status::OK;
}

}  // namespace neuron::rtd

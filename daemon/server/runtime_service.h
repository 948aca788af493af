// neuron.rtd.v1.Runtime. Sessions, memory, streams, executables and
// collectives land with their components; until then those methods answer
// UNIMPLEMENTED (UnimplementedMessageInterceptor names them).
#ifndef NEURON_RTD_DAEMON_SERVER_RUNTIME_SERVICE_H_
#define NEURON_RTD_DAEMON_SERVER_RUNTIME_SERVICE_H_

#include "daemon/hal/device.h"
#include "neuron/rtd/v1/runtime.grpc.pb.h"

namespace neuron::rtd {

// Lifetime: the backend outlives the service.
// Thread-safety: handlers run concurrently on gRPC's threads.
class RuntimeService final : public v1::Runtime::Service {
 public:
  explicit RuntimeService(const hal::Backend& backend) : backend_(backend) {}

  grpc::Status GetRuntimeInfo(grpc::ServerContext* context, const v1::GetRuntimeInfoRequest* request,
                              v1::GetRuntimeInfoResponse* response) override;
  grpc::Status ListDevices(grpc::ServerContext* context, const v1::ListDevicesRequest* request,
                           v1::ListDevicesResponse* response) override;

 private:
  const hal::Backend& backend_;
};

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_SERVER_RUNTIME_SERVICE_H_

// The gRPC implementation of Client, and what the rest of libneuronrt needs
// from it: the stubs, and contexts with the configured deadline.
#ifndef NEURONRT_SRC_INTERNAL_GRPC_CLIENT_H_
#define NEURONRT_SRC_INTERNAL_GRPC_CLIENT_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <chrono>
#include <memory>

#include "neuron/rtd/v1/admin.grpc.pb.h"
#include "neuron/rtd/v1/runtime.grpc.pb.h"
#include "neuronrt/client.h"
#include "src/internal/proto_convert.h"

namespace neuronrt::internal {

namespace v1 = neuron::rtd::v1;

class GrpcClient final : public Client {
 public:
  GrpcClient(DaemonAddress address, absl::Duration rpc_timeout,
             std::shared_ptr<grpc::Channel> channel)
      : address_(std::move(address)),
        rpc_timeout_(rpc_timeout),
        admin_(v1::Admin::NewStub(channel)),
        runtime_(v1::Runtime::NewStub(channel)) {}

  const DaemonAddress& address() const override { return address_; }

  absl::StatusOr<std::vector<DeviceInfo>> ListDevices() const override {
    grpc::ClientContext context;
    PrepareContext(context);
    v1::ListDevicesResponse response;
    grpc::Status status = runtime_->ListDevices(&context, v1::ListDevicesRequest(), &response);
    if (!status.ok()) return internal::FromGrpc(status, address_, "ListDevices");
    std::vector<DeviceInfo> devices;
    devices.reserve(response.devices_size());
    for (const v1::DeviceInfo& device : response.devices()) {
      devices.push_back(internal::FromProto(device));
    }
    return devices;
  }

  absl::StatusOr<HealthInfo> Health() const override {
    grpc::ClientContext context;
    PrepareContext(context);
    v1::HealthResponse response;
    grpc::Status status = admin_->Health(&context, v1::HealthRequest(), &response);
    if (!status.ok()) return internal::FromGrpc(status, address_, "Health");
    return internal::FromProto(response);
  }

  absl::StatusOr<RuntimeInfo> GetRuntimeInfo() const override {
    grpc::ClientContext context;
    PrepareContext(context);
    v1::GetRuntimeInfoResponse response;
    grpc::Status status =
        runtime_->GetRuntimeInfo(&context, v1::GetRuntimeInfoRequest(), &response);
    if (!status.ok()) return internal::FromGrpc(status, address_, "GetRuntimeInfo");
    return internal::FromProto(response);
  }

  absl::StatusOr<std::vector<SessionInfo>> ListSessions() const override {
    grpc::ClientContext context;
    PrepareContext(context);
    v1::ListSessionsResponse response;
    grpc::Status status = admin_->ListSessions(&context, v1::ListSessionsRequest(), &response);
    if (!status.ok()) return FromGrpc(status, address_, "ListSessions");
    std::vector<SessionInfo> sessions;
    for (const v1::SessionInfo& session : response.sessions()) sessions.push_back(FromProto(session));
    return sessions;
  }

  absl::Status KillSession(uint64_t session_id, const std::string& reason) const override {
    grpc::ClientContext context;
    PrepareContext(context);
    v1::KillSessionRequest request;
    request.set_session_id(session_id);
    request.set_reason(reason);
    v1::KillSessionResponse response;
    return FromGrpc(admin_->KillSession(&context, request, &response), address_, "KillSession");
  }

  absl::StatusOr<std::string> Drain(bool enable) const override {
    grpc::ClientContext context;
    PrepareContext(context);
    v1::DrainRequest request;
    request.set_enable(enable);
    v1::DrainResponse response;
    grpc::Status status = admin_->Drain(&context, request, &response);
    if (!status.ok()) return FromGrpc(status, address_, "Drain");
    return StateName(response.state());
  }

  absl::StatusOr<std::vector<CoreStats>> GetStats() const override {
    grpc::ClientContext context;
    PrepareContext(context);
    v1::GetStatsResponse response;
    grpc::Status status = admin_->GetStats(&context, v1::GetStatsRequest(), &response);
    if (!status.ok()) return FromGrpc(status, address_, "GetStats");
    std::vector<CoreStats> cores;
    for (const v1::CoreStats& core : response.cores()) {
      cores.push_back(CoreStats{.core = core.core(),
                                .utilization = core.utilization(),
                                .executions_completed = core.executions_completed(),
                                .executions_failed = core.executions_failed(),
                                .latency_p50_ns = core.execution_latency().p50_ns(),
                                .latency_p99_ns = core.execution_latency().p99_ns(),
                                .latency_max_ns = core.execution_latency().max_ns()});
    }
    return cores;
  }

  absl::StatusOr<std::vector<uint64_t>> ResetDevice(uint32_t device_index) const override {
    grpc::ClientContext context;
    PrepareContext(context);
    v1::ResetDeviceRequest request;
    request.set_device_index(device_index);
    v1::ResetDeviceResponse response;
    grpc::Status status = admin_->ResetDevice(&context, request, &response);
    if (!status.ok()) return FromGrpc(status, address_, "ResetDevice");
    return std::vector<uint64_t>(response.failed_sessions().begin(),
                                 response.failed_sessions().end());
  }

  // Sets the call's deadline from ClientOptions.rpc_timeout.
  void PrepareContext(grpc::ClientContext& context) const {
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoMilliseconds(rpc_timeout_));
  }
  v1::Runtime::Stub& runtime() const { return *runtime_; }

  // One unary Runtime call with the configured deadline; a failure as the
  // daemon's status, naming the call.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(grpc::Status (v1::Runtime::Stub::*method)(grpc::ClientContext*,
                                                                          const Request&,
                                                                          Response*),
                                const Request& request, std::string_view name) const {
    grpc::ClientContext context;
    PrepareContext(context);
    Response response;
    grpc::Status status = (runtime_.get()->*method)(&context, request, &response);
    if (!status.ok()) return FromGrpc(status, address_, name);
    return response;
  }

 private:
  const DaemonAddress address_;
  const absl::Duration rpc_timeout_;
  const std::unique_ptr<v1::Admin::Stub> admin_;
  const std::unique_ptr<v1::Runtime::Stub> runtime_;
};


}  // namespace neuronrt::internal

#endif  // NEURONRT_SRC_INTERNAL_GRPC_CLIENT_H_

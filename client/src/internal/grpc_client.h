// The gRPC implementation of Client, and what the rest of libneuronrt needs
// from it: the stubs, and contexts with the configured deadline.
#ifndef NEURONRT_SRC_INTERNAL_GRPC_CLIENT_H_
#define NEURONRT_SRC_INTERNAL_GRPC_CLIENT_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <algorithm>
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
    auto response = Call(&v1::Runtime::Stub::ListDevices, v1::ListDevicesRequest(), "ListDevices");
    if (!response.ok()) return response.status();
    std::vector<DeviceInfo> devices;
    for (const v1::DeviceInfo& device : response->devices()) devices.push_back(FromProto(device));
    return devices;
  }

  absl::StatusOr<HealthInfo> Health() const override {
    auto response = Call(&v1::Admin::Stub::Health, v1::HealthRequest(), "Health");
    if (!response.ok()) return response.status();
    return FromProto(*response);
  }

  absl::StatusOr<RuntimeInfo> GetRuntimeInfo() const override {
    auto response =
        Call(&v1::Runtime::Stub::GetRuntimeInfo, v1::GetRuntimeInfoRequest(), "GetRuntimeInfo");
    if (!response.ok()) return response.status();
    return FromProto(*response);
  }

  absl::StatusOr<std::vector<SessionInfo>> ListSessions() const override {
    auto response = Call(&v1::Admin::Stub::ListSessions, v1::ListSessionsRequest(), "ListSessions");
    if (!response.ok()) return response.status();
    std::vector<SessionInfo> sessions;
    for (const v1::SessionInfo& session : response->sessions()) sessions.push_back(FromProto(session));
    return sessions;
  }

  absl::Status SetSessionWeight(uint64_t session_id, uint32_t weight) const override {
    v1::SetSessionWeightRequest request;
    request.set_session_id(session_id);
    request.set_weight(weight);
    return Call(&v1::Admin::Stub::SetSessionWeight, request, "SetSessionWeight").status();
  }

  absl::Status KillSession(uint64_t session_id, const std::string& reason) const override {
    v1::KillSessionRequest request;
    request.set_session_id(session_id);
    request.set_reason(reason);
    return Call(&v1::Admin::Stub::KillSession, request, "KillSession").status();
  }

  absl::StatusOr<std::string> Drain(bool enable) const override {
    v1::DrainRequest request;
    request.set_enable(enable);
    auto response = Call(&v1::Admin::Stub::Drain, request, "Drain");
    if (!response.ok()) return response.status();
    return StateName(response->state());
  }

  absl::StatusOr<Stats> GetStats() const override {
    auto response = Call(&v1::Admin::Stub::GetStats, v1::GetStatsRequest(), "GetStats");
    if (!response.ok()) return response.status();
    return FromProto(*response);
  }

  absl::StatusOr<GrantInfo> CreateGrant(const std::string& grant_id,
                                        const std::vector<uint32_t>& cores,
                                        uint64_t hbm_quota_bytes, const std::string& label,
                                        bool* created) const override {
    v1::CreateGrantRequest request;
    request.set_grant_id(grant_id);
    for (uint32_t core : cores) request.add_cores(core);
    request.set_hbm_quota_bytes(hbm_quota_bytes);
    request.set_label(label);
    auto response = Call(&v1::Admin::Stub::CreateGrant, request, "CreateGrant");
    if (!response.ok()) return response.status();
    if (created != nullptr) *created = response->created();
    return FromProto(response->grant());
  }

  absl::StatusOr<std::vector<uint64_t>> DeleteGrant(const std::string& grant_id,
                                                    const std::string& reason) const override {
    v1::DeleteGrantRequest request;
    request.set_grant_id(grant_id);
    request.set_reason(reason);
    auto response = Call(&v1::Admin::Stub::DeleteGrant, request, "DeleteGrant");
    if (!response.ok()) return response.status();
    return std::vector<uint64_t>(response->ended_sessions().begin(),
                                 response->ended_sessions().end());
  }

  absl::StatusOr<std::vector<GrantInfo>> ListGrants() const override {
    auto response = Call(&v1::Admin::Stub::ListGrants, v1::ListGrantsRequest(), "ListGrants");
    if (!response.ok()) return response.status();
    std::vector<GrantInfo> grants;
    for (const v1::GrantInfo& grant : response->grants()) grants.push_back(FromProto(grant));
    return grants;
  }

  absl::StatusOr<std::vector<uint64_t>> ResetDevice(uint32_t device_index) const override {
    v1::ResetDeviceRequest request;
    request.set_device_index(device_index);
    auto response = Call(&v1::Admin::Stub::ResetDevice, request, "ResetDevice");
    if (!response.ok()) return response.status();
    return std::vector<uint64_t>(response->failed_sessions().begin(),
                                 response->failed_sessions().end());
  }

  absl::StatusOr<CacheInfo> GetCacheInfo(bool list_executables) const override {
    v1::GetCacheInfoRequest request;
    request.set_list_executables(list_executables);
    auto response = Call(&v1::Admin::Stub::GetCacheInfo, request, "GetCacheInfo");
    if (!response.ok()) return response.status();
    return FromProto(*response);
  }

  absl::StatusOr<ClearedCache> ClearCache(bool include_disk) const override {
    v1::ClearCacheRequest request;
    request.set_include_disk(include_disk);
    auto response = Call(&v1::Admin::Stub::ClearCache, request, "ClearCache");
    if (!response.ok()) return response.status();
    return ClearedCache{.entries = response->entries_removed(),
                        .disk_entries = response->disk_entries_removed()};
  }

  absl::StatusOr<std::vector<CommunicatorInfo>> ListCommunicators() const override {
    auto response = Call(&v1::Admin::Stub::ListCommunicators, v1::ListCommunicatorsRequest(),
                         "ListCommunicators");
    if (!response.ok()) return response.status();
    std::vector<CommunicatorInfo> communicators;
    for (const v1::CommunicatorInfo& each : response->communicators()) {
      communicators.push_back(CommunicatorInfo{
          .name = each.name(),
          .size = each.size(),
          .members = {each.members().begin(), each.members().end()},
          .collectives_completed = each.collectives_completed(),
          .operations_pending = each.operations_pending(),
          .aborted = each.aborted(),
          .hosts = std::max<uint32_t>(each.hosts(), 1),
          .host = each.host()});
    }
    return communicators;
  }

  // Sets the call's deadline from ClientOptions.rpc_timeout.
  void PrepareContext(grpc::ClientContext& context) const {
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoMilliseconds(rpc_timeout_));
  }
  v1::Runtime::Stub& runtime() const { return *runtime_; }

  // One unary call with the configured deadline; a failure as the daemon's
  // status, naming the call. The stub follows from the method.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(grpc::Status (v1::Runtime::Stub::*method)(grpc::ClientContext*,
                                                                          const Request&,
                                                                          Response*),
                                const Request& request, std::string_view name) const {
    return CallOn(*runtime_, method, request, name, rpc_timeout_);
  }
  // As Call, for a call that may take `timeout` (a rendezvous).
  template <typename Request, typename Response>
  absl::StatusOr<Response> CallFor(absl::Duration timeout,
                                   grpc::Status (v1::Runtime::Stub::*method)(grpc::ClientContext*,
                                                                             const Request&,
                                                                             Response*),
                                   const Request& request, std::string_view name) const {
    return CallOn(*runtime_, method, request, name, timeout);
  }
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(grpc::Status (v1::Admin::Stub::*method)(grpc::ClientContext*,
                                                                        const Request&, Response*),
                                const Request& request, std::string_view name) const {
    return CallOn(*admin_, method, request, name, rpc_timeout_);
  }

 private:
  template <typename Stub, typename Request, typename Response>
  absl::StatusOr<Response> CallOn(Stub& stub,
                                  grpc::Status (Stub::*method)(grpc::ClientContext*,
                                                               const Request&, Response*),
                                  const Request& request, std::string_view name,
                                  absl::Duration timeout) const {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
    Response response;
    grpc::Status status = (stub.*method)(&context, request, &response);
    if (!status.ok()) return FromGrpc(status, address_, name);
    return response;
  }

  const DaemonAddress address_;
  const absl::Duration rpc_timeout_;
  const std::unique_ptr<v1::Admin::Stub> admin_;
  const std::unique_ptr<v1::Runtime::Stub> runtime_;
};


}  // namespace neuronrt::internal

#endif  // NEURONRT_SRC_INTERNAL_GRPC_CLIENT_H_

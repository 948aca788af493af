#include "neuronrt/client.h"

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <sys/stat.h>

#include <chrono>

#include "absl/strings/str_format.h"
#include "neuron/rtd/v1/admin.grpc.pb.h"
#include "neuron/rtd/v1/runtime.grpc.pb.h"
#include "src/internal/proto_convert.h"

namespace neuronrt {
namespace {

namespace v1 = neuron::rtd::v1;

// Matches the daemon's default server.max_message_bytes.
constexpr int kMaxMessageBytes = 64 << 20;

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

 private:
  void PrepareContext(grpc::ClientContext& context) const {
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoMilliseconds(rpc_timeout_));
  }

  const DaemonAddress address_;
  const absl::Duration rpc_timeout_;
  const std::unique_ptr<v1::Admin::Stub> admin_;
  const std::unique_ptr<v1::Runtime::Stub> runtime_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  absl::StatusOr<DaemonAddress> address = ResolveDaemonAddress(options.address);
  if (!address.ok()) return address.status();
  struct stat info {};
  if (::stat(address->socket_path.c_str(), &info) != 0 || !S_ISSOCK(info.st_mode)) {
    return absl::UnavailableError(
        absl::StrFormat("cannot reach neuron-rtd at %s (%s): no socket at %s", address->target,
                        address->origin, address->socket_path));
  }
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(kMaxMessageBytes);
  arguments.SetMaxSendMessageSize(kMaxMessageBytes);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      address->target, grpc::InsecureChannelCredentials(), arguments);
  return std::make_unique<GrpcClient>(*std::move(address), options.rpc_timeout,
                                      std::move(channel));
}

}  // namespace neuronrt

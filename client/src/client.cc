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
#include "src/internal/daemon_trust.h"
#include "src/internal/grpc_client.h"
#include "src/internal/proto_convert.h"

namespace neuronrt {
namespace {

// Matches the daemon's default server.max_message_bytes.
constexpr int kMaxMessageBytes = 64 << 20;

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
  // The check and the probe both precede the first RPC; the directory
  // check makes the socket the probe reached the one gRPC connects to.
  if (address->origin == "per-user socket") {
    const std::string directory =
        address->socket_path.substr(0, address->socket_path.rfind('/'));
    if (absl::Status trusted = CheckPrivateDirectory(directory); !trusted.ok()) {
      return trusted;
    }
  }
  if (absl::Status peer = internal::ProbeDaemonPeer(address->socket_path, address->target);
      !peer.ok()) {
    return peer;
  }
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(kMaxMessageBytes);
  arguments.SetMaxSendMessageSize(kMaxMessageBytes);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      address->target, grpc::InsecureChannelCredentials(), arguments);
  return std::make_unique<internal::GrpcClient>(*std::move(address), options.rpc_timeout,
                                      std::move(channel));
}

}  // namespace neuronrt

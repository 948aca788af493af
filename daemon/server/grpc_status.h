// absl::Status to grpc::Status at the RPC boundary. The codes are numbered
// alike; the message is kept.
#ifndef NEURON_RTD_DAEMON_SERVER_GRPC_STATUS_H_
#define NEURON_RTD_DAEMON_SERVER_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace neuron::rtd {

inline grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_SERVER_GRPC_STATUS_H_

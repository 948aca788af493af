// Wire messages to libneuronrt's public types.
#ifndef NEURONRT_SRC_INTERNAL_PROTO_CONVERT_H_
#define NEURONRT_SRC_INTERNAL_PROTO_CONVERT_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "neuron/rtd/v1/admin.pb.h"
#include "neuron/rtd/v1/runtime.pb.h"
#include "neuronrt/address.h"
#include "neuronrt/device_info.h"
#include "neuronrt/stats.h"

namespace neuronrt::internal {

DeviceInfo FromProto(const neuron::rtd::v1::DeviceInfo& device);
HealthInfo FromProto(const neuron::rtd::v1::HealthResponse& health);
RuntimeInfo FromProto(const neuron::rtd::v1::GetRuntimeInfoResponse& info);
SessionInfo FromProto(const neuron::rtd::v1::SessionInfo& session);
CoreStats FromProto(const neuron::rtd::v1::CoreStats& core);
Stats FromProto(const neuron::rtd::v1::GetStatsResponse& response);
GrantInfo FromProto(const neuron::rtd::v1::GrantInfo& grant);
CompilerInfo FromProto(const neuron::rtd::v1::CompilerInfo& compiler);
CacheInfo FromProto(const neuron::rtd::v1::GetCacheInfoResponse& cache);
// "serving", "draining", "stopping".
std::string StateName(neuron::rtd::v1::ServingState state);

// A failed call as an absl::Status with the same code; the message says
// which daemon answered (or could not be reached) and which call failed.
absl::Status FromGrpc(const grpc::Status& status, const DaemonAddress& address,
                      std::string_view call);

}  // namespace neuronrt::internal

#endif  // NEURONRT_SRC_INTERNAL_PROTO_CONVERT_H_

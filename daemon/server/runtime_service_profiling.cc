// Runtime.SetProfiling and Runtime.DrainProfile: a session's profile buffer.
#include <algorithm>

#include "daemon/server/grpc_status.h"
#include "daemon/server/runtime_service.h"

namespace neuron::rtd {
namespace {

static_assert(static_cast<int>(hal::Engine::kTensor) == v1::ENGINE_TENSOR &&
                  static_cast<int>(hal::Engine::kVector) == v1::ENGINE_VECTOR &&
                  static_cast<int>(hal::Engine::kScalar) == v1::ENGINE_SCALAR &&
                  static_cast<int>(hal::Engine::kGpSimd) == v1::ENGINE_GPSIMD &&
                  static_cast<int>(hal::Engine::kDma) == v1::ENGINE_DMA &&
                  static_cast<int>(hal::Engine::kCollective) == v1::ENGINE_COLLECTIVE &&
                  static_cast<int>(hal::Engine::kSync) == v1::ENGINE_SYNC,
              "hal::Engine must carry neuron.rtd.v1.Engine's values");

// What one DrainProfile returns when the client names no bound: a few MiB
// of response.
constexpr uint32_t kDefaultDrainRecords = 16384;

}  // namespace

grpc::Status RuntimeService::SetProfiling(grpc::ServerContext* context,
                                          const v1::SetProfilingRequest* request,
                                          v1::SetProfilingResponse*) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  (*session)->profile().set_runtime_spans(request->runtime_spans());
  return grpc::Status::OK;
}

grpc::Status RuntimeService::DrainProfile(grpc::ServerContext* context,
                                          const v1::DrainProfileRequest* request,
                                          v1::DrainProfileResponse* response) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  const uint32_t max_records = request->max_records() == 0
                                   ? kDefaultDrainRecords
                                   : std::min(request->max_records(), kDefaultDrainRecords);
  session::ProfileBuffer::Drained drained = (*session)->profile().Drain(max_records);
  for (const queue::ProfiledCommand& command : drained.commands) {
    v1::ProfiledCommand* out = response->add_commands();
    out->set_correlation_id(command.correlation_id);
    out->set_stream_id(command.stream_id);
    out->set_sequence(command.sequence);
    out->set_core(command.core);
    out->set_opcode(command.opcode);
    out->set_op_name(command.op_name);
    out->set_engine(static_cast<v1::Engine>(command.engine));
    out->set_start_ns(command.start_ns);
    out->set_end_ns(command.end_ns);
    out->set_bytes(command.bytes);
    out->set_failed(command.failed);
  }
  for (const queue::RuntimeSpan& span : drained.spans) {
    v1::RuntimeSpan* out = response->add_spans();
    out->set_name(span.name);
    out->set_detail(span.detail);
    out->set_start_ns(span.start_ns);
    out->set_end_ns(span.end_ns);
  }
  response->set_dropped(drained.dropped);
  response->set_more(drained.more);
  return grpc::Status::OK;
}

}  // namespace neuron::rtd

// neuron.rtd.v1.Runtime: sessions, memory, streams, executables and
// communicators.
#ifndef NEURON_RTD_DAEMON_SERVER_RUNTIME_SERVICE_H_
#define NEURON_RTD_DAEMON_SERVER_RUNTIME_SERVICE_H_

#include <sys/types.h>

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "daemon/collectives/communicator_registry.h"
#include "daemon/exec/executable_cache.h"
#include "daemon/hal/device.h"
#include "daemon/memory/memory_manager.h"
#include "daemon/memory/segment_exports.h"
#include "daemon/server/grant_registry.h"
#include "daemon/server/peer_credentials.h"
#include "daemon/session/session_manager.h"
#include "neuron/rtd/v1/runtime.grpc.pb.h"

namespace neuron::rtd {

// Lifetime: everything it is given outlives the service.
// Thread-safety: handlers run concurrently on gRPC's threads.
class RuntimeService final : public v1::Runtime::Service {
 public:
  RuntimeService(const hal::Backend& backend, const memory::MemoryManager& memory,
                 memory::SegmentExports& segment_exports, exec::ExecutableCache& executables, session::SessionManager& sessions,
                 collectives::CommunicatorRegistry& communicators, const PeerRegistry& peers,
                 const GrantRegistry& grants, std::string data_plane_address)
      : backend_(backend),
        memory_(memory),
        segment_exports_(segment_exports),
        executables_(executables),
        sessions_(sessions),
        communicators_(communicators),
        peers_(peers),
        grants_(grants),
        data_plane_address_(std::move(data_plane_address)) {}

  grpc::Status GetRuntimeInfo(grpc::ServerContext* context, const v1::GetRuntimeInfoRequest* request,
                              v1::GetRuntimeInfoResponse* response) override;
  grpc::Status ListDevices(grpc::ServerContext* context, const v1::ListDevicesRequest* request,
                           v1::ListDevicesResponse* response) override;
  grpc::Status OpenSession(grpc::ServerContext* context, const v1::OpenSessionRequest* request,
                           v1::OpenSessionResponse* response) override;
  grpc::Status CloseSession(grpc::ServerContext* context, const v1::CloseSessionRequest* request,
                            v1::CloseSessionResponse* response) override;
  grpc::Status AllocateSegment(grpc::ServerContext* context,
                               const v1::AllocateSegmentRequest* request,
                               v1::AllocateSegmentResponse* response) override;
  grpc::Status FreeSegment(grpc::ServerContext* context, const v1::FreeSegmentRequest* request,
                           v1::FreeSegmentResponse* response) override;
  grpc::Status ExportSegment(grpc::ServerContext* context,
                             const v1::ExportSegmentRequest* request,
                             v1::ExportSegmentResponse* response) override;
  grpc::Status ImportSegment(grpc::ServerContext* context,
                             const v1::ImportSegmentRequest* request,
                             v1::ImportSegmentResponse* response) override;
  grpc::Status SharedSegmentsInUse(grpc::ServerContext* context,
                                   const v1::SharedSegmentsInUseRequest* request,
                                   v1::SharedSegmentsInUseResponse* response) override;
  grpc::Status CreateStream(grpc::ServerContext* context, const v1::CreateStreamRequest* request,
                            v1::CreateStreamResponse* response) override;
  grpc::Status DestroyStream(grpc::ServerContext* context, const v1::DestroyStreamRequest* request,
                             v1::DestroyStreamResponse* response) override;
  grpc::Status RegisterHostMemory(grpc::ServerContext* context,
                                  const v1::RegisterHostMemoryRequest* request,
                                  v1::RegisterHostMemoryResponse* response) override;
  grpc::Status UnregisterHostMemory(grpc::ServerContext* context,
                                    const v1::UnregisterHostMemoryRequest* request,
                                    v1::UnregisterHostMemoryResponse* response) override;
  grpc::Status LookupExecutable(grpc::ServerContext* context,
                                const v1::LookupExecutableRequest* request,
                                v1::LookupExecutableResponse* response) override;
  grpc::Status LoadExecutable(grpc::ServerContext* context,
                              grpc::ServerReader<v1::LoadExecutableChunk>* reader,
                              v1::LoadExecutableResponse* response) override;
  grpc::Status UnloadExecutable(grpc::ServerContext* context,
                                const v1::UnloadExecutableRequest* request,
                                v1::UnloadExecutableResponse* response) override;
  grpc::Status CreateCommunicatorId(grpc::ServerContext* context,
                                    const v1::CreateCommunicatorIdRequest* request,
                                    v1::CreateCommunicatorIdResponse* response) override;
  // Blocks until every rank has joined or the timeout passes.
  grpc::Status InitCommunicator(grpc::ServerContext* context,
                                const v1::InitCommunicatorRequest* request,
                                v1::InitCommunicatorResponse* response) override;
  grpc::Status DestroyCommunicator(grpc::ServerContext* context,
                                   const v1::DestroyCommunicatorRequest* request,
                                   v1::DestroyCommunicatorResponse* response) override;
  grpc::Status GetStreamErrors(grpc::ServerContext* context,
                               const v1::GetStreamErrorsRequest* request,
                               v1::GetStreamErrorsResponse* response) override;
  grpc::Status SetMemoryCap(grpc::ServerContext* context, const v1::SetMemoryCapRequest* request,
                            v1::SetMemoryCapResponse* response) override;
  grpc::Status SetProfiling(grpc::ServerContext* context, const v1::SetProfilingRequest* request,
                            v1::SetProfilingResponse* response) override;
  grpc::Status DrainProfile(grpc::ServerContext* context, const v1::DrainProfileRequest* request,
                            v1::DrainProfileResponse* response) override;

 private:
  // The caller's session, when the caller may use it.
  absl::StatusOr<std::shared_ptr<session::Session>> CallerSession(grpc::ServerContext* context,
                                                                  uint64_t session_id) const;
  absl::StatusOr<PeerCredentials> Caller(grpc::ServerContext* context) const;
  // Admits a LoadExecutable of `uid` that announces `bytes` of body, which
  // the daemon buffers until it has all of it: RESOURCE_EXHAUSTED past
  // kMaxLoadingBytes in all or kMaxLoadingBytesPerUser of one user. Eager
  // ops are a few hundred bytes; the bound is for a client that announces
  // 256 MiB bodies on many streams. EndLoad releases it.
  absl::Status BeginLoad(uid_t uid, uint64_t bytes);
  void EndLoad(uid_t uid, uint64_t bytes);
  // Each InitCommunicator holds a gRPC thread while it waits for its peers:
  // RESOURCE_EXHAUSTED past kMaxJoining in all or kMaxJoiningPerUser of one
  // user. EndJoin releases it.
  absl::Status BeginJoin(uid_t uid);
  void EndJoin(uid_t uid);
  // A refusal of `size` bytes of HBM on `core` because its device is full,
  // with the sessions that hold the most of that device named, largest
  // first (session, pid, uid, client name, bytes); other statuses as they
  // are.
  absl::Status WithHbmHolders(const absl::Status& refused, uint32_t core, uint64_t size) const;

  const hal::Backend& backend_;
  const memory::MemoryManager& memory_;
  memory::SegmentExports& segment_exports_;
  exec::ExecutableCache& executables_;
  session::SessionManager& sessions_;
  collectives::CommunicatorRegistry& communicators_;
  const PeerRegistry& peers_;
  const GrantRegistry& grants_;
  const std::string data_plane_address_;

  absl::Mutex loads_mutex_;
  uint64_t loading_bytes_ ABSL_GUARDED_BY(loads_mutex_) = 0;
  std::map<uid_t, uint64_t> loading_bytes_by_user_ ABSL_GUARDED_BY(loads_mutex_);
  uint32_t joining_ ABSL_GUARDED_BY(loads_mutex_) = 0;
  std::map<uid_t, uint32_t> joining_by_user_ ABSL_GUARDED_BY(loads_mutex_);
};

inline constexpr uint32_t kMaxJoining = 1024;
inline constexpr uint32_t kMaxJoiningPerUser = 256;
// The longest a rank waits for its peers to join.
inline constexpr uint32_t kMaxJoinTimeoutMs = 3600 * 1000;
inline constexpr uint32_t kDefaultJoinTimeoutMs = 600 * 1000;

inline constexpr uint64_t kMaxLoadingBytes = 2ull << 30;
inline constexpr uint64_t kMaxLoadingBytesPerUser = 512ull << 20;

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_SERVER_RUNTIME_SERVICE_H_

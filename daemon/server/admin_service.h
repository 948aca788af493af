// neuron.rtd.v1.Admin. Methods whose component has not landed yet answer
// UNIMPLEMENTED (UnimplementedMessageInterceptor names them).
#ifndef NEURON_RTD_DAEMON_SERVER_ADMIN_SERVICE_H_
#define NEURON_RTD_DAEMON_SERVER_ADMIN_SERVICE_H_

#include "daemon/collectives/communicator_registry.h"
#include "daemon/compiler/compile_service.h"
#include "daemon/exec/executable_cache.h"
#include "daemon/hal/device.h"
#include "daemon/memory/memory_manager.h"
#include "daemon/queue/scheduler.h"
#include "daemon/session/session_manager.h"
#include "daemon/server/daemon_status.h"
#include "daemon/server/grant_registry.h"
#include "daemon/server/peer_credentials.h"
#include "neuron/rtd/v1/admin.grpc.pb.h"

namespace neuron::rtd {

// Lifetime: the backend, registry, status and compiler outlive the service.
// Thread-safety: handlers run concurrently on gRPC's threads.
class AdminService final : public v1::Admin::Service {
 public:
  AdminService(const hal::Backend& backend, const memory::MemoryManager& memory,
               const queue::Scheduler& scheduler, exec::ExecutableCache& executables,
               session::SessionManager& sessions,
               const collectives::CommunicatorRegistry& communicators, const PeerRegistry& peers,
               DaemonStatus& status, GrantRegistry& grants, compiler::CompileService* compiler)
      : backend_(backend),
        memory_(memory),
        scheduler_(scheduler),
        executables_(executables),
        sessions_(sessions),
        communicators_(communicators),
        peers_(peers),
        status_(status),
        grants_(grants),
        compiler_(compiler) {}

  grpc::Status Health(grpc::ServerContext* context, const v1::HealthRequest* request,
                      v1::HealthResponse* response) override;
  grpc::Status ListCommunicators(grpc::ServerContext* context,
                                 const v1::ListCommunicatorsRequest* request,
                                 v1::ListCommunicatorsResponse* response) override;
  grpc::Status ListDevices(grpc::ServerContext* context, const v1::AdminListDevicesRequest* request,
                           v1::AdminListDevicesResponse* response) override;
  grpc::Status ListSessions(grpc::ServerContext* context, const v1::ListSessionsRequest* request,
                            v1::ListSessionsResponse* response) override;
  grpc::Status KillSession(grpc::ServerContext* context, const v1::KillSessionRequest* request,
                           v1::KillSessionResponse* response) override;
  grpc::Status SetSessionWeight(grpc::ServerContext* context,
                                const v1::SetSessionWeightRequest* request,
                                v1::SetSessionWeightResponse* response) override;
  grpc::Status Drain(grpc::ServerContext* context, const v1::DrainRequest* request,
                     v1::DrainResponse* response) override;
  grpc::Status ResetDevice(grpc::ServerContext* context, const v1::ResetDeviceRequest* request,
                           v1::ResetDeviceResponse* response) override;
  grpc::Status GetStats(grpc::ServerContext* context, const v1::GetStatsRequest* request,
                        v1::GetStatsResponse* response) override;
  grpc::Status GetCacheInfo(grpc::ServerContext* context, const v1::GetCacheInfoRequest* request,
                            v1::GetCacheInfoResponse* response) override;
  grpc::Status ClearCache(grpc::ServerContext* context, const v1::ClearCacheRequest* request,
                          v1::ClearCacheResponse* response) override;
  grpc::Status CreateGrant(grpc::ServerContext* context, const v1::CreateGrantRequest* request,
                           v1::CreateGrantResponse* response) override;
  grpc::Status DeleteGrant(grpc::ServerContext* context, const v1::DeleteGrantRequest* request,
                           v1::DeleteGrantResponse* response) override;
  grpc::Status ListGrants(grpc::ServerContext* context, const v1::ListGrantsRequest* request,
                          v1::ListGrantsResponse* response) override;

 private:
  void FillCoreStats(uint32_t core, const queue::CoreQueue::Stats& stats, uint64_t interval_ns,
                     v1::CoreStats* out) const;
  void FillDaemonStats(v1::DaemonStats* out) const;
  // The compiler's state and counters (no disk figures).
  void FillCompilerInfo(v1::CompilerInfo* out) const;
  void FillCacheInfo(bool list_executables, v1::GetCacheInfoResponse* response) const;
  // Root or the daemon's own user: who may drain or reset.
  // The peer of the call; UNAUTHENTICATED when the daemon cannot tell.
  absl::StatusOr<PeerCredentials> Caller(grpc::ServerContext* context) const;
  grpc::Status CheckAdministrator(grpc::ServerContext* context, std::string_view action) const;
  // PERMISSION_DENIED, naming `action`, for a peer of a grant's socket.
  grpc::Status RefuseThroughGrant(grpc::ServerContext* context, std::string_view action) const;
  // The grant whose socket the caller used; null for the daemon's socket;
  // PERMISSION_DENIED when that grant was deleted.
  absl::StatusOr<std::shared_ptr<session::Grant>> GrantOfCaller(
      grpc::ServerContext* context) const;
  static void GrantToProto(const GrantRegistry::Listed& listed, uint32_t session_count,
                           v1::GrantInfo* out);

  const hal::Backend& backend_;
  const memory::MemoryManager& memory_;
  const queue::Scheduler& scheduler_;
  exec::ExecutableCache& executables_;
  session::SessionManager& sessions_;
  const collectives::CommunicatorRegistry& communicators_;
  const PeerRegistry& peers_;
  DaemonStatus& status_;
  GrantRegistry& grants_;
  // Null when graphs stay interpreted.
  compiler::CompileService* const compiler_;
};

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_SERVER_ADMIN_SERVICE_H_

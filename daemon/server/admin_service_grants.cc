// Admin.CreateGrant, DeleteGrant and ListGrants: the cores and HBM quotas
// served on sockets of their own (docs/operations.md, "Grants").
#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "daemon/server/admin_service.h"
#include "daemon/server/grpc_status.h"

namespace neuron::rtd {

void AdminService::GrantToProto(const GrantRegistry::Listed& listed, uint32_t session_count,
                                v1::GrantInfo* out) {
  const session::Grant& grant = *listed.grant;
  out->set_grant_id(grant.id());
  for (uint32_t core : grant.cores()) out->add_cores(core);
  out->set_hbm_quota_bytes(grant.hbm_quota_bytes());
  out->set_hbm_used_bytes(grant.hbm_used_bytes());
  out->set_label(grant.label());
  out->set_directory(listed.directory);
  out->set_session_count(session_count);
  out->set_created_at_unix_ms(absl::ToUnixMillis(grant.created_at()));
}

grpc::Status AdminService::CreateGrant(grpc::ServerContext* context,
                                       const v1::CreateGrantRequest* request,
                                       v1::CreateGrantResponse* response) {
  if (grpc::Status allowed = CheckAdministrator(context, "create grants"); !allowed.ok()) {
    return allowed;
  }
  absl::StatusOr<GrantRegistry::Created> created = grants_.Create(
      request->grant_id(), std::vector<uint32_t>(request->cores().begin(), request->cores().end()),
      request->hbm_quota_bytes(), request->label());
  if (!created.ok()) return ToGrpc(created.status());
  GrantToProto(created->grant, 0, response->mutable_grant());
  response->set_created(created->created);
  return grpc::Status::OK;
}

grpc::Status AdminService::DeleteGrant(grpc::ServerContext* context,
                                       const v1::DeleteGrantRequest* request,
                                       v1::DeleteGrantResponse* response) {
  if (grpc::Status allowed = CheckAdministrator(context, "delete grants"); !allowed.ok()) {
    return allowed;
  }
  std::shared_ptr<session::Grant> grant = grants_.Find(request->grant_id());
  if (grant == nullptr) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrFormat("no grant %s", absl::CHexEscape(request->grant_id().substr(0, 80))));
  }
  // Revoked first (no session opens through it any more), its sessions
  // ended, and only then its sockets and directory removed: once a listing
  // no longer shows the grant, nothing of it runs.
  grant->Revoke();
  const std::string reason = absl::StrFormat(
      "grant %s was deleted%s%s", request->grant_id(), request->reason().empty() ? "" : ": ",
      request->reason().substr(0, 256));
  for (uint64_t id : sessions_.CloseSessionsOfGrant(request->grant_id(), reason)) {
    response->add_ended_sessions(id);
  }
  // A concurrent DeleteGrant may have removed it meanwhile: deleted either way.
  if (absl::Status deleted = grants_.Delete(request->grant_id());
      !deleted.ok() && !absl::IsNotFound(deleted)) {
    return ToGrpc(deleted);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::ListGrants(grpc::ServerContext* context, const v1::ListGrantsRequest*,
                                      v1::ListGrantsResponse* response) {
  absl::StatusOr<std::shared_ptr<session::Grant>> own = GrantOfCaller(context);
  if (!own.ok()) return ToGrpc(own.status());
  std::map<std::string, uint32_t> sessions_of;
  for (const std::shared_ptr<session::Session>& session : sessions_.List()) {
    if (session->grant() != nullptr) ++sessions_of[session->grant()->id()];
  }
  for (const GrantRegistry::Listed& listed : grants_.List()) {
    if (*own != nullptr && listed.grant != *own) continue;
    GrantToProto(listed, sessions_of[listed.grant->id()], response->add_grants());
  }
  return grpc::Status::OK;
}

}  // namespace neuron::rtd

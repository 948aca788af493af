#include "daemon/server/runtime_service.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "daemon/common/monotonic_clock.h"
#include "daemon/hal/neff.h"
#include "daemon/server/device_proto.h"
#include "daemon/server/grpc_status.h"
#include "neuron/rtd/abi/command_ring.h"
#include "neuron/rtd/abi/data_plane.h"
#include "neuron/version.h"

static_assert(int{NEURON_RTD_REGION_COMPLETION_PAGE} ==
                      int{neuron::rtd::v1::SHARED_REGION_KIND_COMPLETION_PAGE} &&
                  int{NEURON_RTD_REGION_COMMAND_RING} ==
                      int{neuron::rtd::v1::SHARED_REGION_KIND_COMMAND_RING} &&
                  int{NEURON_RTD_REGION_STAGING} == int{neuron::rtd::v1::SHARED_REGION_KIND_STAGING} &&
                  int{NEURON_RTD_REGION_HOST_MEMORY} ==
                      int{neuron::rtd::v1::SHARED_REGION_KIND_HOST_MEMORY},
              "the data-plane ABI's region kinds must be SharedRegionKind's values");

namespace neuron::rtd {
namespace {

// A NEFF executable's tensors, as its backend found them.
void AddNeffTensors(const exec::Executable& executable,
                    google::protobuf::RepeatedPtrField<v1::NeffTensor>& out) {
  const auto* neff = dynamic_cast<const hal::NeffExecutable*>(executable.prepared.get());
  if (neff == nullptr) return;
  for (const hal::NeffTensor& tensor : neff->tensors()) {
    v1::NeffTensor* entry = out.Add();
    entry->set_name(tensor.name);
    entry->set_input(tensor.input);
    entry->set_size_bytes(tensor.size_bytes);
    entry->mutable_shape()->Add(tensor.shape.begin(), tensor.shape.end());
    if (tensor.dtype >= 0) entry->set_dtype(static_cast<v1::ScalarType>(tensor.dtype));
  }
}

void RegionToProto(uint64_t id, v1::SharedRegionKind kind, uint64_t size, v1::SharedRegion* out) {
  out->set_region_id(id);
  out->set_kind(kind);
  out->set_size_bytes(size);
}

}  // namespace

absl::StatusOr<PeerCredentials> RuntimeService::Caller(grpc::ServerContext* context) const {
  std::optional<PeerCredentials> peer = peers_.Lookup(context->peer());
  if (!peer) {
    return absl::UnauthenticatedError("the daemon cannot identify this connection's peer");
  }
  return *peer;
}

absl::StatusOr<std::shared_ptr<session::Session>> RuntimeService::CallerSession(
    grpc::ServerContext* context, uint64_t session_id) const {
  absl::StatusOr<PeerCredentials> caller = Caller(context);
  if (!caller.ok()) return caller.status();
  return sessions_.Get(session_id, *caller);
}

grpc::Status RuntimeService::GetRuntimeInfo(grpc::ServerContext*, const v1::GetRuntimeInfoRequest*,
                                            v1::GetRuntimeInfoResponse* response) {
  response->set_daemon_version(NEURON_RTD_VERSION);
  response->set_abi_version_major(NEURON_RTD_ABI_VERSION_MAJOR);
  response->set_abi_version_minor(NEURON_RTD_ABI_VERSION_MINOR);
  response->set_backend(ToProto(backend_.kind()));
  response->add_features("profiler");
  response->set_instance_id(communicators_.instance_id());
  if (const collectives::FabricRouter* fabric = communicators_.router(); fabric != nullptr) {
    response->add_features("collectives.libfabric");
    response->set_fabric_address(fabric->address());
    response->set_fabric_description(fabric->description());
  }
  return grpc::Status::OK;
}

grpc::Status RuntimeService::ListDevices(grpc::ServerContext* context,
                                         const v1::ListDevicesRequest*,
                                         v1::ListDevicesResponse* response) {
  absl::StatusOr<PeerCredentials> caller = Caller(context);
  if (!caller.ok()) return ToGrpc(caller.status());
  absl::StatusOr<std::shared_ptr<session::Grant>> grant = grants_.OfPeer(*caller);
  if (!grant.ok()) return ToGrpc(grant.status());
  DevicesToProto(backend_, memory_, response->mutable_devices());
  if (*grant != nullptr) KeepGrantedCores(**grant, response->mutable_devices());
  return grpc::Status::OK;
}

grpc::Status RuntimeService::OpenSession(grpc::ServerContext* context,
                                         const v1::OpenSessionRequest* request,
                                         v1::OpenSessionResponse* response) {
  absl::StatusOr<PeerCredentials> caller = Caller(context);
  if (!caller.ok()) return ToGrpc(caller.status());
  if (request->abi_version_major() != NEURON_RTD_ABI_VERSION_MAJOR) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrFormat("the client speaks ring ABI %d.%d and neuron-rtd %s speaks "
                                        "%d.%d; use matching versions",
                                        request->abi_version_major(), request->abi_version_minor(),
                                        NEURON_RTD_VERSION, NEURON_RTD_ABI_VERSION_MAJOR,
                                        NEURON_RTD_ABI_VERSION_MINOR));
  }
  absl::StatusOr<std::shared_ptr<session::Grant>> of_peer = grants_.OfPeer(*caller);
  if (!of_peer.ok()) return ToGrpc(of_peer.status());
  const std::shared_ptr<session::Grant> grant = *std::move(of_peer);
  absl::StatusOr<session::OpenedSession> opened = sessions_.Open(
      *caller, request->client_name(),
      std::vector<uint32_t>(request->cores().begin(), request->cores().end()), grant);
  if (!opened.ok()) return ToGrpc(opened.status());
  const session::Session& session = *opened->session;
  response->set_session_id(session.id());
  for (uint32_t core : session.cores()) response->add_cores(core);
  const session::SessionLimits& limits = session.limits();
  v1::SessionLimits* out_limits = response->mutable_limits();
  out_limits->set_max_hbm_bytes(limits.max_hbm_bytes);
  out_limits->set_max_streams(limits.max_streams);
  out_limits->set_max_ring_bytes(limits.max_ring_bytes);
  out_limits->set_max_registered_host_bytes(limits.max_host_memory_bytes);
  out_limits->set_segment_alignment_bytes(hal::kHbmPageBytes);
  // A grant's client may see its directory at another path (a container's
  // mount): it is told the socket's name in that directory.
  response->set_data_plane_address(grant == nullptr ? data_plane_address_
                                                    : std::string(kGrantSocketName) + ".data");
  response->set_attach_token(opened->attach_token);
  RegionToProto(session.completion_page().id(), v1::SHARED_REGION_KIND_COMPLETION_PAGE,
                session.completion_page().size(), response->mutable_completion_page());
  RegionToProto(session.staging().id(), v1::SHARED_REGION_KIND_STAGING, session.staging().size(),
                response->mutable_staging());
  response->mutable_owner()->set_pid(caller->pid);
  response->mutable_owner()->set_uid(caller->uid);
  response->mutable_owner()->set_gid(caller->gid);
  return grpc::Status::OK;
}

grpc::Status RuntimeService::CloseSession(grpc::ServerContext* context,
                                          const v1::CloseSessionRequest* request,
                                          v1::CloseSessionResponse*) {
  absl::StatusOr<PeerCredentials> caller = Caller(context);
  if (!caller.ok()) return ToGrpc(caller.status());
  return ToGrpc(sessions_.Close(request->session_id(), *caller, session::SessionEnd::kClosed,
                                NEURON_RTD_STATUS_CLOSED, "closed by its client"));
}

grpc::Status RuntimeService::AllocateSegment(grpc::ServerContext* context,
                                             const v1::AllocateSegmentRequest* request,
                                             v1::AllocateSegmentResponse* response) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  absl::StatusOr<memory::SegmentRef> segment =
      (*session)->AllocateSegment(request->core(), request->size_bytes());
  if (!segment.ok()) return ToGrpc(WithHbmHolders(segment.status(), request->core(), request->size_bytes()));
  response->set_segment_id((*segment)->id());
  response->set_device_address((*segment)->range().address);
  response->set_size_bytes((*segment)->range().size);
  return grpc::Status::OK;
}

grpc::Status RuntimeService::FreeSegment(grpc::ServerContext* context,
                                         const v1::FreeSegmentRequest* request,
                                         v1::FreeSegmentResponse*) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  return ToGrpc((*session)->FreeSegment(request->segment_id()));
}

namespace {

// The most holders an out-of-memory refusal names.
constexpr size_t kHoldersNamed = 5;

}  // namespace

absl::Status RuntimeService::WithHbmHolders(const absl::Status& refused, uint32_t core,
                                            uint64_t size) const {
  if (refused.code() != absl::StatusCode::kResourceExhausted) return refused;
  auto on_device = [](const hal::DeviceInfo& info, uint32_t some_core) {
    return some_core >= info.first_core_index &&
           some_core - info.first_core_index < info.logical_cores();
  };
  const hal::Device* device = nullptr;
  for (const hal::Device* candidate : backend_.devices()) {
    if (on_device(candidate->info(), core)) device = candidate;
  }
  if (device == nullptr) return refused;
  const hal::DeviceInfo& info = device->info();
  // A quota's or a cap's refusal is the session's own: the device had room.
  if (memory_.stats(info.index).largest_free_bytes >= size) return refused;
  struct Holder {
    uint64_t bytes;
    std::shared_ptr<session::Session> session;
  };
  std::vector<Holder> holders;
  for (std::shared_ptr<session::Session>& session : sessions_.List()) {
    uint64_t bytes = 0;
    for (const auto& [held_core, held] : session->HbmBytesByCore()) {
      if (on_device(info, held_core)) bytes += held;
    }
    if (bytes > 0) holders.push_back(Holder{.bytes = bytes, .session = std::move(session)});
  }
  if (holders.empty()) return refused;
  std::sort(holders.begin(), holders.end(),
            [](const Holder& a, const Holder& b) { return a.bytes > b.bytes; });
  std::vector<std::string> named;
  for (size_t i = 0; i < std::min(holders.size(), kHoldersNamed); ++i) {
    const session::Session& holder = *holders[i].session;
    named.push_back(absl::StrFormat("session %d (pid %d, uid %d, %s) %d bytes", holder.id(),
                                    holder.owner().pid, holder.owner().uid,
                                    holder.client_name(), holders[i].bytes));
  }
  if (holders.size() > kHoldersNamed) {
    named.push_back(absl::StrFormat("%d more sessions", holders.size() - kHoldersNamed));
  }
  return absl::ResourceExhaustedError(absl::StrFormat(
      "%s; device %d's HBM is held by %s", refused.message(), info.index,
      absl::StrJoin(named, ", ")));
}

namespace {

memory::SegmentOwner OwnerOf(const session::Session& session) {
  return memory::SegmentOwner{
      .uid = session.owner().uid,
      .grant = session.grant() == nullptr ? std::string() : session.grant()->id()};
}

}  // namespace

grpc::Status RuntimeService::ExportSegment(grpc::ServerContext* context,
                                           const v1::ExportSegmentRequest* request,
                                           v1::ExportSegmentResponse* response) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  absl::StatusOr<memory::ExportedSegment> shared =
      (*session)->FindSegmentToShare(request->segment_id());
  if (!shared.ok()) return ToGrpc(shared.status());
  absl::StatusOr<std::string> handle =
      segment_exports_.Export(shared->segment, shared->core, OwnerOf(**session));
  if (!handle.ok()) return ToGrpc(handle.status());
  response->set_handle(*std::move(handle));
  return grpc::Status::OK;
}

grpc::Status RuntimeService::ImportSegment(grpc::ServerContext* context,
                                           const v1::ImportSegmentRequest* request,
                                           v1::ImportSegmentResponse* response) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  absl::StatusOr<memory::ExportedSegment> shared =
      segment_exports_.Redeem(request->handle(), OwnerOf(**session));
  if (!shared.ok()) return ToGrpc(shared.status());
  if (absl::Status imported = (*session)->ImportSegment(*shared); !imported.ok()) {
    return ToGrpc(imported);
  }
  response->set_segment_id(shared->segment->id());
  response->set_device_address(shared->segment->range().address);
  response->set_size_bytes(shared->segment->range().size);
  response->set_core(shared->core);
  return grpc::Status::OK;
}

grpc::Status RuntimeService::SharedSegmentsInUse(grpc::ServerContext* context,
                                                 const v1::SharedSegmentsInUseRequest* request,
                                                 v1::SharedSegmentsInUseResponse* response) {
  constexpr int kMaxSegmentIds = 65536;
  if (request->segment_ids_size() > kMaxSegmentIds) {
    return ToGrpc(absl::InvalidArgumentError(absl::StrFormat(
        "%d segment ids asked about; at most %d", request->segment_ids_size(), kMaxSegmentIds)));
  }
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  for (uint64_t segment_id : request->segment_ids()) {
    absl::StatusOr<memory::ExportedSegment> held = (*session)->FindSegmentToShare(segment_id);
    if (!held.ok()) continue;
    // The caller's table and `held` reference it.
    if (segment_exports_.InUseElsewhere(segment_id, /*caller_references=*/2)) {
      response->add_in_use_segment_ids(segment_id);
    }
  }
  return grpc::Status::OK;
}

grpc::Status RuntimeService::SetMemoryCap(grpc::ServerContext* context,
                                          const v1::SetMemoryCapRequest* request,
                                          v1::SetMemoryCapResponse*) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  const std::optional<uint64_t> cap =
      request->has_cap_bytes() ? std::optional<uint64_t>(request->cap_bytes()) : std::nullopt;
  return ToGrpc((*session)->SetMemoryCap(request->core(), cap));
}

grpc::Status RuntimeService::CreateStream(grpc::ServerContext* context,
                                          const v1::CreateStreamRequest* request,
                                          v1::CreateStreamResponse* response) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  absl::StatusOr<session::StreamRegion> stream =
      (*session)->CreateStream(request->core(), request->ring_bytes(), request->priority());
  if (!stream.ok()) return ToGrpc(stream.status());
  response->set_stream_id(stream->stream->id());
  RegionToProto(stream->stream->ring().id(), v1::SHARED_REGION_KIND_COMMAND_RING,
                stream->stream->ring().size(), response->mutable_ring());
  response->set_completion_slot(stream->completion_slot);
  return grpc::Status::OK;
}

grpc::Status RuntimeService::DestroyStream(grpc::ServerContext* context,
                                           const v1::DestroyStreamRequest* request,
                                           v1::DestroyStreamResponse*) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  return ToGrpc((*session)->DestroyStream(request->stream_id()));
}

grpc::Status RuntimeService::RegisterHostMemory(grpc::ServerContext* context,
                                                const v1::RegisterHostMemoryRequest* request,
                                                v1::RegisterHostMemoryResponse* response) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  absl::StatusOr<std::shared_ptr<memory::SharedRegion>> region =
      (*session)->RegisterHostMemory(request->size_bytes());
  if (!region.ok()) return ToGrpc(region.status());
  response->set_host_memory_id((*region)->id());
  RegionToProto((*region)->id(), v1::SHARED_REGION_KIND_HOST_MEMORY, (*region)->size(),
                response->mutable_region());
  return grpc::Status::OK;
}

grpc::Status RuntimeService::UnregisterHostMemory(grpc::ServerContext* context,
                                                  const v1::UnregisterHostMemoryRequest* request,
                                                  v1::UnregisterHostMemoryResponse*) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  return ToGrpc((*session)->UnregisterHostMemory(request->host_memory_id()));
}

grpc::Status RuntimeService::LookupExecutable(grpc::ServerContext* context,
                                              const v1::LookupExecutableRequest* request,
                                              v1::LookupExecutableResponse* response) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  absl::StatusOr<std::optional<exec::ExecutableHold>> hold =
      executables_.LookupAndHold(request->content_hash(), (*session)->owner().uid);
  if (!hold.ok()) return ToGrpc(hold.status());
  if (!*hold) {
    response->set_found(false);
    return grpc::Status::OK;
  }
  const uint64_t id = (*hold)->executable()->id;
  AddNeffTensors(*(*hold)->executable(), *response->mutable_neff_tensors());
  if (absl::Status held = (*session)->AddExecutable(**std::move(hold)); !held.ok()) {
    return ToGrpc(held);
  }
  response->set_found(true);
  response->set_executable_id(id);
  return grpc::Status::OK;
}

grpc::Status RuntimeService::UnloadExecutable(grpc::ServerContext* context,
                                              const v1::UnloadExecutableRequest* request,
                                              v1::UnloadExecutableResponse*) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  return ToGrpc((*session)->UnloadExecutable(request->executable_id()));
}

absl::Status RuntimeService::BeginLoad(uid_t uid, uint64_t bytes) {
  absl::MutexLock lock(&loads_mutex_);
  const uint64_t of_user = loading_bytes_by_user_.contains(uid) ? loading_bytes_by_user_[uid] : 0;
  if (bytes > kMaxLoadingBytes - loading_bytes_ || bytes > kMaxLoadingBytesPerUser - of_user) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "neuron-rtd is receiving %d bytes of executables (%d of them uid %d's; at most %d at "
        "once, %d per user): a %d-byte executable must wait until one has loaded",
        loading_bytes_, of_user, uid, kMaxLoadingBytes, kMaxLoadingBytesPerUser, bytes));
  }
  loading_bytes_ += bytes;
  loading_bytes_by_user_[uid] = of_user + bytes;
  return absl::OkStatus();
}

void RuntimeService::EndLoad(uid_t uid, uint64_t bytes) {
  absl::MutexLock lock(&loads_mutex_);
  loading_bytes_ -= bytes;
  if ((loading_bytes_by_user_[uid] -= bytes) == 0) loading_bytes_by_user_.erase(uid);
}

grpc::Status RuntimeService::LoadExecutable(grpc::ServerContext* context,
                                            grpc::ServerReader<v1::LoadExecutableChunk>* reader,
                                            v1::LoadExecutableResponse* response) {
  // Bound on one executable's body, whatever the client announces.
  constexpr uint64_t kMaxExecutableBytes = 256ull << 20;
  v1::LoadExecutableChunk chunk;
  if (!reader->Read(&chunk) || !chunk.has_header()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "LoadExecutable: the first chunk must carry the header");
  }
  const v1::LoadExecutableChunk::Header header = chunk.header();
  auto session = CallerSession(context, header.session_id());
  if (!session.ok()) return ToGrpc(session.status());
  const int64_t started_ns = MonotonicNowNs();
  exec::ExecutableBodyKind kind;
  switch (header.kind()) {
    case v1::EXECUTABLE_KIND_EAGER_OP:
      kind = exec::ExecutableBodyKind::kEagerOp;
      break;
    case v1::EXECUTABLE_KIND_GRAPH:
      kind = exec::ExecutableBodyKind::kGraph;
      break;
    case v1::EXECUTABLE_KIND_NEFF:
      kind = exec::ExecutableBodyKind::kNeff;
      break;
    case v1::EXECUTABLE_KIND_NKI:
      kind = exec::ExecutableBodyKind::kNki;
      break;
    default:
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                          absl::StrFormat("executables of kind %s are not supported",
                                          v1::ExecutableKind_Name(header.kind())));
  }
  if (header.total_bytes() > kMaxExecutableBytes) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrFormat("executable of %d bytes exceeds %d", header.total_bytes(),
                                        kMaxExecutableBytes));
  }
  const uid_t uid = (*session)->owner().uid;
  if (absl::Status admitted = BeginLoad(uid, header.total_bytes()); !admitted.ok()) {
    return ToGrpc(admitted);
  }
  absl::Cleanup end_load = [this, uid, bytes = header.total_bytes()] { EndLoad(uid, bytes); };
  std::string body = chunk.data();
  while (body.size() <= header.total_bytes() && reader->Read(&chunk)) {
    if (chunk.has_header()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "LoadExecutable: only the first chunk carries a header");
    }
    body += chunk.data();
  }
  if (body.size() != header.total_bytes()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrFormat("LoadExecutable: received %d bytes, the header announced %d",
                                        body.size(), header.total_bytes()));
  }
  absl::StatusOr<exec::LoadResult> loaded =
      executables_.Load(header.content_hash(), header.name(), body, kind, uid);
  if (!loaded.ok()) return ToGrpc(loaded.status());
  const std::shared_ptr<const exec::Executable> executable = loaded->hold.executable();
  const uint64_t id = executable->id;
  if (absl::Status held = (*session)->AddExecutable(std::move(loaded->hold)); !held.ok()) {
    return ToGrpc(held);
  }
  response->set_executable_id(id);
  response->set_cache_hit(loaded->cache_hit);
  AddNeffTensors(*executable, *response->mutable_neff_tensors());
  (*session)->profile().AddSpan(queue::RuntimeSpan{
      .name = "load_executable",
      .detail = absl::StrCat(header.name(), loaded->cache_hit ? " (cache hit)" : ""),
      .start_ns = started_ns,
      .end_ns = MonotonicNowNs()});
  return grpc::Status::OK;
}

grpc::Status RuntimeService::GetStreamErrors(grpc::ServerContext* context,
                                             const v1::GetStreamErrorsRequest* request,
                                             v1::GetStreamErrorsResponse* response) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  for (const queue::StreamError& error : (*session)->StreamErrors(request->stream_id())) {
    v1::ErrorDetail* detail = response->add_errors();
    detail->set_nrt_status(static_cast<v1::NrtStatus>(error.nrt_status));
    detail->set_message(error.message);
    detail->set_stream_id(error.stream_id);
    detail->set_sequence(error.sequence);
    detail->set_opcode(error.opcode);
    detail->set_op_name(error.op_name);
    detail->set_error_type(error.error_type);
    detail->set_sticky(error.sticky);
  }
  return grpc::Status::OK;
}

absl::Status RuntimeService::BeginJoin(uid_t uid) {
  absl::MutexLock lock(&loads_mutex_);
  const uint32_t of_user = joining_by_user_.contains(uid) ? joining_by_user_[uid] : 0;
  if (joining_ >= kMaxJoining || of_user >= kMaxJoiningPerUser) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%d ranks are waiting for their peers to join (%d of them uid %d's; at most %d at once, "
        "%d per user)",
        joining_, of_user, uid, kMaxJoining, kMaxJoiningPerUser));
  }
  ++joining_;
  joining_by_user_[uid] = of_user + 1;
  return absl::OkStatus();
}

void RuntimeService::EndJoin(uid_t uid) {
  absl::MutexLock lock(&loads_mutex_);
  --joining_;
  if (--joining_by_user_[uid] == 0) joining_by_user_.erase(uid);
}

grpc::Status RuntimeService::CreateCommunicatorId(grpc::ServerContext* context,
                                                  const v1::CreateCommunicatorIdRequest* request,
                                                  v1::CreateCommunicatorIdResponse* response) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  absl::StatusOr<std::string> id = communicators_.CreateId((*session)->id(), *session);
  if (!id.ok()) return ToGrpc(id.status());
  response->set_communicator_id(*std::move(id));
  return grpc::Status::OK;
}

grpc::Status RuntimeService::InitCommunicator(grpc::ServerContext* context,
                                              const v1::InitCommunicatorRequest* request,
                                              v1::InitCommunicatorResponse* response) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  if (request->timeout_ms() > kMaxJoinTimeoutMs ||
      request->operation_timeout_ms() > kMaxJoinTimeoutMs) {
    return ToGrpc(absl::InvalidArgumentError(absl::StrFormat(
        "timeouts of %d and %d ms exceed the longest, %d ms", request->timeout_ms(),
        request->operation_timeout_ms(), kMaxJoinTimeoutMs)));
  }
  const uid_t uid = (*session)->owner().uid;
  if (absl::Status admitted = BeginJoin(uid); !admitted.ok()) return ToGrpc(admitted);
  const uint32_t join_ms =
      request->timeout_ms() == 0 ? kDefaultJoinTimeoutMs : request->timeout_ms();
  const uint32_t operation_ms =
      request->operation_timeout_ms() == 0 ? join_ms : request->operation_timeout_ms();
  std::optional<collectives::HostTopology> hosts;
  if (request->has_hosts()) {
    const v1::CommunicatorHosts& given = request->hosts();
    if (given.hosts_size() > static_cast<int>(collectives::kMaxHosts)) {
      EndJoin(uid);
      return ToGrpc(absl::InvalidArgumentError(
          absl::StrFormat("%d hosts exceed the most, %d", given.hosts_size(),
                          collectives::kMaxHosts)));
    }
    std::vector<std::string> addresses;
    std::vector<std::vector<uint32_t>> ranks;
    for (const v1::CommunicatorHosts::Host& host : given.hosts()) {
      addresses.push_back(host.fabric_address());
      ranks.emplace_back(host.ranks().begin(), host.ranks().end());
    }
    absl::StatusOr<collectives::HostTopology> topology = collectives::MakeHostTopology(
        given.host(), std::move(addresses), std::move(ranks), request->world_size(),
        given.group_key());
    if (!topology.ok()) {
      EndJoin(uid);
      return ToGrpc(topology.status());
    }
    hosts = *std::move(topology);
  }
  absl::StatusOr<std::shared_ptr<collectives::Communicator>> communicator = communicators_.Join(
      request->communicator_id(), request->rank(), request->world_size(),
      (*session)->Description(), absl::Milliseconds(join_ms), absl::Milliseconds(operation_ms),
      std::move(hosts));
  EndJoin(uid);
  if (!communicator.ok()) return ToGrpc(communicator.status());
  response->set_name((*communicator)->name());
  absl::StatusOr<uint64_t> handle = (*session)->AddCommunicator(
      queue::CommunicatorMembership{.communicator = *communicator, .rank = request->rank()});
  if (!handle.ok()) return ToGrpc(handle.status());
  response->set_communicator_handle(*handle);
  return grpc::Status::OK;
}

grpc::Status RuntimeService::DestroyCommunicator(grpc::ServerContext* context,
                                                 const v1::DestroyCommunicatorRequest* request,
                                                 v1::DestroyCommunicatorResponse*) {
  auto session = CallerSession(context, request->session_id());
  if (!session.ok()) return ToGrpc(session.status());
  return ToGrpc((*session)->DestroyCommunicator(request->communicator_handle()));
}

}  // namespace neuron::rtd

// libFuzzer target for every Runtime and Admin RPC: a real daemon runs in
// this process on a private socket and each input is one call to it. The
// input's first byte picks the method, the second its flags, the rest is the
// request message (protobuf wire format); flag bit 0 replaces the request's
// session_id with a live session of this process, so that the handlers get
// past the session check; flag bit 1 sends the call through a grant's socket
// (a container's view: its own cores, quota and read-only Admin), with a
// live session opened there. Whatever a client sends, the daemon must answer
// or refuse it, never crash or hang (a call gets 10 s). With GCC,
// corpus_replay_main.cc drives it over tests/fuzz/corpus/rpc.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/stubs/logging.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daemon/common/logging.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/server/daemon.h"
#include "neuron/rtd/v1/admin.grpc.pb.h"
#include "neuron/rtd/v1/runtime.grpc.pb.h"
#include "neuronrt/session.h"

namespace {

namespace v1 = neuron::rtd::v1;
using google::protobuf::Message;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "rpc_fuzz: %s\n", what);
    std::abort();
  }
}

void SetDeadline(grpc::ClientContext& context) {
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
}

// Calls that do not answer within the deadline are hangs: a finding.
void CheckAnswered(const grpc::Status& status, const std::string& method) {
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    std::fprintf(stderr, "rpc_fuzz: %s did not answer within 10 s\n", method.c_str());
    std::abort();
  }
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    std::fprintf(stderr, "rpc_fuzz: the daemon stopped answering after %s: %s\n",
                 method.c_str(), status.error_message().c_str());
    std::abort();
  }
}

struct Method {
  std::string name;
  std::function<std::unique_ptr<Message>()> make_request;
  std::function<grpc::Status(const Message&)> call;
};

template <typename Stub, typename Request, typename Response>
Method Unary(std::string name, Stub* stub,
             grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*)) {
  return Method{.name = std::move(name),
                .make_request = [] { return std::make_unique<Request>(); },
                .call = [stub, method](const Message& request) {
                  grpc::ClientContext context;
                  SetDeadline(context);
                  Response response;
                  return (stub->*method)(&context, static_cast<const Request&>(request),
                                         &response);
                }};
}

class Harness {
 public:
  Harness() {
    google::protobuf::SetLogHandler(nullptr);
    neuron::rtd::InitLogging("off");
    char pattern[] = "/tmp/rpc-fuzz-XXXXXX";
    Check(::mkdtemp(pattern) != nullptr, "mkdtemp");
    neuron::rtd::DaemonConfig config;
    config.server.socket_path = std::string(pattern) + "/rtd.sock";
    // Sessions the inputs open and never attach go quickly.
    config.session.attach_timeout_ms = 100;
    config.session.max_sessions = 65536;
    config.session.max_sessions_per_user = 65536;
    // A small cache: eviction runs often, and the fuzzer's memory stays
    // flat (1 GiB, the default, is what the cache grew to in a long run).
    config.executables.max_cache_bytes = 64ull << 20;
    config.executables.max_bytes_per_user = 32ull << 20;
    // Each grant holds two listeners and their threads.
    config.server.max_grants = 8;
    auto daemon = neuron::rtd::Daemon::Create(config, neuron::rtd::DefaultOsSysCalls());
    Check(daemon.ok(), "creating the daemon");
    daemon_ = *std::move(daemon);
    Check(daemon_->Start().ok(), "starting the daemon");
    address_ = "unix:" + config.server.socket_path;
    auto channel = grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
    runtime_ = v1::Runtime::NewStub(channel);
    admin_ = v1::Admin::NewStub(channel);
    grant_address_ = "unix:" + std::string(pattern) + "/grants/" + kGrant + "/neuron-rtd.sock";
    EnsureGrant();
    methods_ = MethodsOn(runtime_.get(), admin_.get());
  }

  void Run(const uint8_t* data, size_t size) {
    if (size < 2) return;
    const bool through_grant = (data[1] & 2) != 0;
    const std::vector<Method>& table = through_grant ? grant_methods_ : methods_;
    const Method& method = table[data[0] % table.size()];
    std::unique_ptr<Message> request = method.make_request();
    if (!request->ParseFromArray(data + 2, static_cast<int>(size - 2))) return;
    if ((data[1] & 1) != 0 && !UseLiveSession(*request, through_grant)) return;
    CheckAnswered(method.call(*request), method.name);
    // Undo what would stop the next inputs from reaching the handlers.
    if (method.name == "Drain") {
      v1::DrainRequest serve;
      serve.set_enable(false);
      CheckAnswered(method.call(serve), "Drain");
    }
    if (method.name == "DeleteGrant" || method.name == "CreateGrant") EnsureGrant();
  }

 private:
  static Method LoadExecutable(v1::Runtime::Stub* runtime) {
    return Method{.name = "LoadExecutable",
                  .make_request = [] { return std::make_unique<v1::LoadExecutableChunk>(); },
                  .call = [runtime](const Message& chunk) {
                    grpc::ClientContext context;
                    SetDeadline(context);
                    v1::LoadExecutableResponse response;
                    auto writer = runtime->LoadExecutable(&context, &response);
                    writer->Write(static_cast<const v1::LoadExecutableChunk&>(chunk));
                    writer->WritesDone();
                    return writer->Finish();
                  }};
  }

  std::vector<Method> MethodsOn(v1::Runtime::Stub* runtime, v1::Admin::Stub* admin) {
    return {
        Unary("GetRuntimeInfo", runtime, &v1::Runtime::Stub::GetRuntimeInfo),
        Unary("ListDevices", runtime, &v1::Runtime::Stub::ListDevices),
        Unary("OpenSession", runtime, &v1::Runtime::Stub::OpenSession),
        Unary("CloseSession", runtime, &v1::Runtime::Stub::CloseSession),
        Unary("AllocateSegment", runtime, &v1::Runtime::Stub::AllocateSegment),
        Unary("FreeSegment", runtime, &v1::Runtime::Stub::FreeSegment),
        Unary("CreateStream", runtime, &v1::Runtime::Stub::CreateStream),
        Unary("DestroyStream", runtime, &v1::Runtime::Stub::DestroyStream),
        Unary("RegisterHostMemory", runtime, &v1::Runtime::Stub::RegisterHostMemory),
        Unary("UnregisterHostMemory", runtime, &v1::Runtime::Stub::UnregisterHostMemory),
        Unary("LookupExecutable", runtime, &v1::Runtime::Stub::LookupExecutable),
        LoadExecutable(runtime),
        Unary("UnloadExecutable", runtime, &v1::Runtime::Stub::UnloadExecutable),
        Unary("CreateCommunicatorId", runtime, &v1::Runtime::Stub::CreateCommunicatorId),
        Unary("InitCommunicator", runtime, &v1::Runtime::Stub::InitCommunicator),
        Unary("DestroyCommunicator", runtime, &v1::Runtime::Stub::DestroyCommunicator),
        Unary("GetStreamErrors", runtime, &v1::Runtime::Stub::GetStreamErrors),
        Unary("Health", admin, &v1::Admin::Stub::Health),
        Unary("Admin.ListDevices", admin, &v1::Admin::Stub::ListDevices),
        Unary("ListSessions", admin, &v1::Admin::Stub::ListSessions),
        Unary("KillSession", admin, &v1::Admin::Stub::KillSession),
        Unary("ResetDevice", admin, &v1::Admin::Stub::ResetDevice),
        Unary("GetStats", admin, &v1::Admin::Stub::GetStats),
        Unary("GetCacheInfo", admin, &v1::Admin::Stub::GetCacheInfo),
        Unary("ClearCache", admin, &v1::Admin::Stub::ClearCache),
        Unary("Drain", admin, &v1::Admin::Stub::Drain),
        Unary("SetSessionWeight", admin, &v1::Admin::Stub::SetSessionWeight),
        Unary("ListCommunicators", admin, &v1::Admin::Stub::ListCommunicators),
        Unary("SetProfiling", runtime, &v1::Runtime::Stub::SetProfiling),
        Unary("DrainProfile", runtime, &v1::Runtime::Stub::DrainProfile),
        Unary("SetMemoryCap", runtime, &v1::Runtime::Stub::SetMemoryCap),
        Unary("CreateGrant", admin, &v1::Admin::Stub::CreateGrant),
        Unary("DeleteGrant", admin, &v1::Admin::Stub::DeleteGrant),
        Unary("ListGrants", admin, &v1::Admin::Stub::ListGrants),
        Unary("ExportSegment", runtime, &v1::Runtime::Stub::ExportSegment),
        Unary("ImportSegment", runtime, &v1::Runtime::Stub::ImportSegment),
        Unary("SharedSegmentsInUse", runtime, &v1::Runtime::Stub::SharedSegmentsInUse),
    };
  }

  // The grant the inputs of flag bit 1 go through, made again when an input
  // deleted it (with a fresh channel: the old one's socket is gone).
  void EnsureGrant() {
    v1::CreateGrantResponse response;
    grpc::Status status = CreateFuzzGrant(response);
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      // Inputs made max_grants grants: start over.
      grpc::ClientContext context;
      SetDeadline(context);
      v1::ListGrantsResponse grants;
      CheckAnswered(admin_->ListGrants(&context, v1::ListGrantsRequest(), &grants), "ListGrants");
      for (const v1::GrantInfo& grant : grants.grants()) {
        grpc::ClientContext deleting;
        SetDeadline(deleting);
        v1::DeleteGrantRequest request;
        request.set_grant_id(grant.grant_id());
        v1::DeleteGrantResponse deleted;
        CheckAnswered(admin_->DeleteGrant(&deleting, request, &deleted), "DeleteGrant");
      }
      status = CreateFuzzGrant(response);
    }
    // An input may have made a grant of that id with other terms: it serves
    // as well.
    if (!status.ok() && status.error_code() != grpc::StatusCode::ALREADY_EXISTS) {
      std::fprintf(stderr, "rpc_fuzz: cannot create the fuzz grant: %s\n",
                   status.error_message().c_str());
      std::abort();
    }
    if (grant_runtime_ != nullptr && !response.created()) return;
    auto channel = grpc::CreateChannel(grant_address_, grpc::InsecureChannelCredentials());
    grant_runtime_ = v1::Runtime::NewStub(channel);
    grant_admin_ = v1::Admin::NewStub(channel);
    grant_methods_ = MethodsOn(grant_runtime_.get(), grant_admin_.get());
    grant_session_.reset();
  }

  grpc::Status CreateFuzzGrant(v1::CreateGrantResponse& response) {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::CreateGrantRequest request;
    request.set_grant_id(kGrant);
    request.add_cores(0);
    request.set_hbm_quota_bytes(64ull << 20);
    const grpc::Status status = admin_->CreateGrant(&context, request, &response);
    CheckAnswered(status, "CreateGrant");
    return status;
  }

  // Sets every session_id field (at any depth of the first level) to this
  // process's live session (opened through the grant for the grant's
  // inputs), reopening it when an input ended it.
  // False when no live session could be opened.
  bool UseLiveSession(Message& request, bool through_grant) {
    std::unique_ptr<neuronrt::Session>& live = through_grant ? grant_session_ : session_;
    if (live == nullptr || !SessionAlive(live->id())) {
      live.reset();
      auto session = neuronrt::Session::Open(
          {.client = {.address = through_grant ? grant_address_ : address_}});
      if (!session.ok()) {
        // A refusal, not a crash: the session an earlier input ended may
        // still count against the grant's limits until its connection is
        // torn down. The input is skipped; a daemon that stopped answering
        // is caught by the next call.
        std::fprintf(stderr, "rpc_fuzz: no live session for this input: %s\n",
                     std::string(session.status().message()).c_str());
        return false;
      }
      live = *std::move(session);
    }
    const uint64_t live_id = live->id();
    auto set = [&](Message& message) {
      const google::protobuf::FieldDescriptor* field =
          message.GetDescriptor()->FindFieldByName("session_id");
      if (field != nullptr && field->type() == google::protobuf::FieldDescriptor::TYPE_UINT64 &&
          !field->is_repeated()) {
        message.GetReflection()->SetUInt64(&message, field, live_id);
      }
    };
    set(request);
    const google::protobuf::Reflection* reflection = request.GetReflection();
    const google::protobuf::Descriptor* descriptor = request.GetDescriptor();
    for (int i = 0; i < descriptor->field_count(); ++i) {
      const google::protobuf::FieldDescriptor* field = descriptor->field(i);
      if (field->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE &&
          !field->is_repeated()) {
        set(*reflection->MutableMessage(&request, field));
      }
    }
    return true;
  }

  bool SessionAlive(uint64_t session_id) {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::ListSessionsResponse sessions;
    CheckAnswered(admin_->ListSessions(&context, v1::ListSessionsRequest(), &sessions),
                  "ListSessions");
    for (const v1::SessionInfo& session : sessions.sessions()) {
      if (session.session_id() == session_id) return true;
    }
    return false;
  }

  std::unique_ptr<neuron::rtd::Daemon> daemon_;
  std::string address_;
  std::unique_ptr<v1::Runtime::Stub> runtime_;
  std::unique_ptr<v1::Admin::Stub> admin_;
  std::vector<Method> methods_;
  static constexpr char kGrant[] = "fuzz";
  std::string grant_address_;
  std::unique_ptr<v1::Runtime::Stub> grant_runtime_;
  std::unique_ptr<v1::Admin::Stub> grant_admin_;
  std::vector<Method> grant_methods_;
  std::unique_ptr<neuronrt::Session> grant_session_;
  std::unique_ptr<neuronrt::Session> session_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Leaked: the daemon serves until the process exits.
  static Harness* harness = new Harness();
  harness->Run(data, size);
  return 0;
}

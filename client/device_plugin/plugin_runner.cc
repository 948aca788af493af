#include "client/device_plugin/plugin_runner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <set>
#include <utility>

#include "absl/strings/str_format.h"
#include "client/device_plugin/allocation.h"
#include "client/k8s/pod_resources.h"
#include "grpcpp/grpcpp.h"

namespace neuron_device_plugin {
namespace {

constexpr char kApiVersion[] = "v1beta1";
constexpr absl::Duration kKubeletCallTimeout = absl::Seconds(5);

ino_t InodeOf(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 ? info.st_ino : 0;
}

void Log(const std::string& message) { std::cerr << "neuron-rtd-device-plugin: " << message << "\n"; }

void SetDeadline(grpc::ClientContext& context) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + kKubeletCallTimeout));
}

}  // namespace

PluginRunner::PluginRunner(const neuronrt::Client& daemon, PluginOptions options)
    : daemon_(daemon),
      options_(std::move(options)),
      socket_path_(options_.kubelet_dir + "/" + options_.endpoint),
      kubelet_socket_(options_.kubelet_dir + "/kubelet.sock") {}

PluginRunner::~PluginRunner() { StopServing(); }

void PluginRunner::RequestStop() {
  absl::MutexLock lock(&mutex_);
  stop_ = true;
}

absl::Status PluginRunner::Serve() {
  // A socket left by an earlier plugin is replaced (the plugin watcher's
  // rule: delete old sockets and listen anew under the same name).
  ::unlink(socket_path_.c_str());
  service_ = std::make_unique<DevicePluginService>(daemon_, options_.service);
  service_->Refresh();
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::UnavailableError(absl::StrFormat("cannot serve on %s", socket_path_));
  }
  return absl::OkStatus();
}

void PluginRunner::StopServing() {
  if (service_ != nullptr) service_->Stop();
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
    server_->Wait();
    server_.reset();
  }
  service_.reset();
  registered_ = false;
}

absl::Status PluginRunner::Register() {
  // The kubelet dials the plugin as soon as it registers: serve first.
  auto registration = v1beta1::Registration::NewStub(
      grpc::CreateChannel("unix:" + kubelet_socket_, grpc::InsecureChannelCredentials()));
  v1beta1::RegisterRequest request;
  request.set_version(kApiVersion);
  request.set_endpoint(options_.endpoint);
  request.set_resource_name(options_.resource_name);
  request.mutable_options()->set_pre_start_required(true);
  request.mutable_options()->set_get_preferred_allocation_available(true);
  grpc::ClientContext context;
  SetDeadline(context);
  v1beta1::Empty response;
  const ino_t kubelet_inode = InodeOf(kubelet_socket_);
  grpc::Status status = registration->Register(&context, request, &response);
  if (!status.ok()) {
    return absl::UnavailableError(absl::StrFormat("registering %s with the kubelet at %s: %s",
                                                  options_.resource_name, kubelet_socket_,
                                                  status.error_message()));
  }
  registered_kubelet_inode_ = kubelet_inode;
  registered_ = true;
  Log(absl::StrFormat("registered %s at %s", options_.resource_name, socket_path_));
  return absl::OkStatus();
}

bool PluginRunner::KubeletRestarted() const {
  return InodeOf(socket_path_) == 0 || InodeOf(kubelet_socket_) != registered_kubelet_inode_;
}

void PluginRunner::CollectGrants() {
  if (options_.pod_resources_socket.empty() || InodeOf(options_.pod_resources_socket) == 0) return;
  absl::StatusOr<std::vector<neuron_k8s::ContainerCores>> held = neuron_k8s::ListContainerCores(
      options_.pod_resources_socket, options_.resource_name, kKubeletCallTimeout);
  if (!held.ok()) {
    // Nothing is deleted on what cannot be seen.
    Log("cannot list the pods' resources: " + std::string(held.status().message()));
    return;
  }
  std::set<std::string> in_use;
  for (const neuron_k8s::ContainerCores& container : *held) {
    in_use.insert(GrantIdFor(container.cores));
  }
  absl::StatusOr<std::vector<neuronrt::GrantInfo>> grants = daemon_.ListGrants();
  if (!grants.ok()) return;
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  for (const neuronrt::GrantInfo& grant : *grants) {
    if (grant.label != options_.service.grant_label || in_use.contains(grant.grant_id)) continue;
    if (absl::Milliseconds(now_ms - static_cast<int64_t>(grant.created_at_unix_ms)) <
        options_.gc_grace) {
      continue;
    }
    absl::StatusOr<std::vector<uint64_t>> ended =
        daemon_.DeleteGrant(grant.grant_id, "no pod uses its cores any more");
    if (ended.ok()) {
      Log(absl::StrFormat("deleted grant %s (no pod uses it; %d session(s) ended)",
                          grant.grant_id, ended->size()));
    }
  }
}

absl::Status PluginRunner::Run() {
  if (absl::Status served = Serve(); !served.ok()) return served;
  while (true) {
    {
      absl::MutexLock lock(&mutex_);
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return stop_; };
      mutex_.AwaitWithTimeout(absl::Condition(&stopping),
                              registered_ ? options_.poll_interval : absl::Milliseconds(100));
      if (stop_) break;
    }
    if (registered_ && KubeletRestarted()) {
      Log("the kubelet restarted: serving and registering again");
      StopServing();
      if (absl::Status served = Serve(); !served.ok()) return served;
    }
    if (!registered_) {
      absl::Status registered = Register();
      // Retried every 100 ms until the kubelet answers; said once.
      if (!registered.ok() && !register_failing_) Log(std::string(registered.message()));
      register_failing_ = !registered.ok();
    }
    if (service_ != nullptr) service_->Refresh();
    CollectGrants();
  }
  StopServing();
  ::unlink(socket_path_.c_str());
  return absl::OkStatus();
}

}  // namespace neuron_device_plugin

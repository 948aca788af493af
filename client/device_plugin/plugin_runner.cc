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

absl::Status ValidatePluginOptions(const PluginOptions& options) {
  if (options.resources.empty()) return absl::InvalidArgumentError("no resource to advertise");
  std::set<neuron_k8s::Unit> units;
  std::set<std::string> names;
  std::set<std::string> endpoints;
  for (const ServedResource& served : options.resources) {
    const std::string& name = served.resource.name;
    if (name.empty() || name.find('/') == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "resource name \"%s\" is not an extended resource name (domain/name)", name));
    }
    if (served.endpoint.empty() || served.endpoint.find('/') != std::string::npos ||
        served.endpoint == "kubelet.sock" || served.endpoint.starts_with(".")) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "endpoint \"%s\" of %s is not a socket name in the kubelet's directory",
          served.endpoint, name));
    }
    if (!units.insert(served.resource.unit).second) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: only one resource of %s can be advertised (the kubelet would book two names of "
          "the same hardware apart)",
          name, served.resource.unit == neuron_k8s::Unit::kCore ? "cores" : "devices"));
    }
    if (!names.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrFormat("resource %s is advertised twice", name));
    }
    if (!endpoints.insert(served.endpoint).second) {
      return absl::InvalidArgumentError(
          absl::StrFormat("endpoint %s is used by two resources", served.endpoint));
    }
  }
  return absl::OkStatus();
}

PluginRunner::PluginRunner(const neuronrt::Client& daemon, PluginOptions options)
    : daemon_(daemon),
      options_(std::move(options)),
      kubelet_socket_(options_.kubelet_dir + "/kubelet.sock") {
  for (const ServedResource& served : options_.resources) {
    endpoints_.push_back(
        Endpoint{.served = served, .socket_path = options_.kubelet_dir + "/" + served.endpoint});
  }
}

PluginRunner::~PluginRunner() {
  for (Endpoint& endpoint : endpoints_) StopServing(endpoint);
}

void PluginRunner::RequestStop() {
  absl::MutexLock lock(&mutex_);
  stop_ = true;
}

void PluginRunner::RequestLook() {
  absl::MutexLock lock(&mutex_);
  look_requested_ = true;
}

absl::Status PluginRunner::Serve(Endpoint& endpoint) {
  // A socket left by an earlier plugin is replaced (the plugin watcher's
  // rule: delete old sockets and listen anew under the same name).
  ::unlink(endpoint.socket_path.c_str());
  ServiceOptions service = options_.service;
  service.on_grant = [this] { RequestLook(); };
  endpoint.service =
      std::make_unique<DevicePluginService>(daemon_, endpoint.served.resource, std::move(service));
  endpoint.service->Update(view_);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + endpoint.socket_path, grpc::InsecureServerCredentials());
  builder.RegisterService(endpoint.service.get());
  endpoint.server = builder.BuildAndStart();
  if (endpoint.server == nullptr) {
    return absl::UnavailableError(absl::StrFormat("cannot serve on %s", endpoint.socket_path));
  }
  return absl::OkStatus();
}

void PluginRunner::StopServing(Endpoint& endpoint) {
  if (endpoint.service != nullptr) endpoint.service->Stop();
  if (endpoint.server != nullptr) {
    endpoint.server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
    endpoint.server->Wait();
    endpoint.server.reset();
  }
  endpoint.service.reset();
  endpoint.registered = false;
}

absl::Status PluginRunner::Register(Endpoint& endpoint) {
  // The kubelet dials the plugin as soon as it registers: serve first.
  auto registration = v1beta1::Registration::NewStub(
      grpc::CreateChannel("unix:" + kubelet_socket_, grpc::InsecureChannelCredentials()));
  v1beta1::RegisterRequest request;
  request.set_version(kApiVersion);
  request.set_endpoint(endpoint.served.endpoint);
  request.set_resource_name(endpoint.served.resource.name);
  request.mutable_options()->set_pre_start_required(true);
  request.mutable_options()->set_get_preferred_allocation_available(true);
  grpc::ClientContext context;
  SetDeadline(context);
  v1beta1::Empty response;
  const ino_t kubelet_inode = InodeOf(kubelet_socket_);
  grpc::Status status = registration->Register(&context, request, &response);
  if (!status.ok()) {
    return absl::UnavailableError(absl::StrFormat("registering %s with the kubelet at %s: %s",
                                                  endpoint.served.resource.name, kubelet_socket_,
                                                  status.error_message()));
  }
  endpoint.registered_kubelet_inode = kubelet_inode;
  endpoint.registered = true;
  Log(absl::StrFormat("registered %s at %s", endpoint.served.resource.name, endpoint.socket_path));
  return absl::OkStatus();
}

bool PluginRunner::KubeletRestarted(const Endpoint& endpoint) const {
  return InodeOf(endpoint.socket_path) == 0 ||
         InodeOf(kubelet_socket_) != endpoint.registered_kubelet_inode;
}

void PluginRunner::LookAtDaemon() {
  absl::StatusOr<neuronrt::HealthInfo> health = daemon_.Health();
  absl::StatusOr<std::vector<neuronrt::DeviceInfo>> devices =
      health.ok() ? daemon_.ListDevices()
                  : absl::StatusOr<std::vector<neuronrt::DeviceInfo>>(health.status());
  absl::StatusOr<std::vector<neuronrt::GrantInfo>> grants =
      devices.ok() ? daemon_.ListGrants()
                   : absl::StatusOr<std::vector<neuronrt::GrantInfo>>(devices.status());
  // A daemon that cannot be reached, or does not serve (draining,
  // stopping), makes every known device Unhealthy: pods must not be placed
  // on it.
  view_.serving = grants.ok() && health->serving();
  if (devices.ok()) view_.devices = *std::move(devices);
  grants_.clear();
  view_.granted_as_cores.clear();
  view_.granted_as_devices.clear();
  if (!grants.ok()) return;
  for (neuronrt::GrantInfo& grant : *grants) {
    if (grant.label != options_.service.grant_label) continue;
    std::set<uint32_t>& held = UnitOfGrantId(grant.grant_id) == neuron_k8s::Unit::kCore
                                   ? view_.granted_as_cores
                                   : view_.granted_as_devices;
    held.insert(grant.cores.begin(), grant.cores.end());
    grants_.push_back(std::move(grant));
  }
}

void PluginRunner::CollectGrants() {
  if (options_.pod_resources_socket.empty() || InodeOf(options_.pod_resources_socket) == 0) return;
  std::vector<neuron_k8s::Resource> resources;
  for (const ServedResource& served : options_.resources) resources.push_back(served.resource);
  absl::StatusOr<std::vector<neuron_k8s::ContainerDevices>> held =
      neuron_k8s::ListContainerDevices(options_.pod_resources_socket, resources,
                                       kKubeletCallTimeout);
  if (!held.ok()) {
    // Nothing is deleted on what cannot be seen.
    Log("cannot list the pods' resources: " + std::string(held.status().message()));
    return;
  }
  std::set<std::string> in_use;
  for (const neuron_k8s::ContainerDevices& container : *held) {
    in_use.insert(GrantIdFor(container.resource.unit, container.indices));
  }
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  for (const neuronrt::GrantInfo& grant : grants_) {
    if (in_use.contains(grant.grant_id)) continue;
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
  if (absl::Status valid = ValidatePluginOptions(options_); !valid.ok()) return valid;
  LookAtDaemon();
  for (Endpoint& endpoint : endpoints_) {
    if (absl::Status served = Serve(endpoint); !served.ok()) return served;
  }
  while (true) {
    const bool all_registered = std::all_of(endpoints_.begin(), endpoints_.end(),
                                            [](const Endpoint& e) { return e.registered; });
    {
      absl::MutexLock lock(&mutex_);
      auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
        return stop_ || look_requested_;
      };
      mutex_.AwaitWithTimeout(absl::Condition(&woken),
                              all_registered ? options_.poll_interval : absl::Milliseconds(100));
      if (stop_) break;
      look_requested_ = false;
    }
    LookAtDaemon();
    for (Endpoint& endpoint : endpoints_) {
      if (endpoint.registered && KubeletRestarted(endpoint)) {
        Log(absl::StrFormat("the kubelet restarted: serving and registering %s again",
                            endpoint.served.resource.name));
        StopServing(endpoint);
        if (absl::Status served = Serve(endpoint); !served.ok()) return served;
      }
      if (!endpoint.registered) {
        absl::Status registered = Register(endpoint);
        // Retried every 100 ms until the kubelet answers; said once.
        if (!registered.ok() && !endpoint.register_failing) {
          Log(std::string(registered.message()));
        }
        endpoint.register_failing = !registered.ok();
      }
      endpoint.service->Update(view_);
    }
    CollectGrants();
  }
  for (Endpoint& endpoint : endpoints_) {
    StopServing(endpoint);
    ::unlink(endpoint.socket_path.c_str());
  }
  return absl::OkStatus();
}

}  // namespace neuron_device_plugin

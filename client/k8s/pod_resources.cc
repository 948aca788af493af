#include "client/k8s/pod_resources.h"

#include <sys/stat.h>

#include "absl/strings/str_format.h"
#include "grpcpp/grpcpp.h"
#include "k8s/podresources/v1/api.grpc.pb.h"

namespace neuron_k8s {

absl::StatusOr<std::vector<ContainerDevices>> ListContainerDevices(
    const std::string& socket_path, const std::vector<Resource>& resources,
    absl::Duration deadline) {
  // gRPC would wait out its connection backoff on a socket that is not
  // there (the kubelet not running, the directory not mounted).
  struct stat info{};
  if (::stat(socket_path.c_str(), &info) != 0 || !S_ISSOCK(info.st_mode)) {
    return absl::UnavailableError(
        absl::StrFormat("the kubelet's pod-resources socket %s is not there", socket_path));
  }
  auto lister = v1::PodResourcesLister::NewStub(
      grpc::CreateChannel("unix:" + socket_path, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  v1::ListPodResourcesResponse pods;
  if (grpc::Status status = lister->List(&context, v1::ListPodResourcesRequest(), &pods);
      !status.ok()) {
    const std::string why =
        absl::StrFormat("listing the pods' resources at %s: %s", socket_path,
                        status.error_message());
    return status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
               ? absl::DeadlineExceededError(why)
               : absl::UnavailableError(why);
  }
  std::vector<ContainerDevices> held;
  for (const v1::PodResources& pod : pods.pod_resources()) {
    for (const v1::ContainerResources& container : pod.containers()) {
      for (const Resource& resource : resources) {
        std::vector<std::string> ids;
        for (const v1::ContainerDevices& devices : container.devices()) {
          if (devices.resource_name() != resource.name) continue;
          for (const std::string& id : devices.device_ids()) {
            if (IndexOfDeviceId(resource.unit, id).ok()) ids.push_back(id);
          }
        }
        if (ids.empty()) continue;
        held.push_back({.pod = pod.name(),
                        .pod_namespace = pod.namespace_(),
                        .container = container.name(),
                        .resource = resource,
                        .indices = *IndicesOfDeviceIds(resource.unit, ids)});
      }
    }
  }
  return held;
}

}  // namespace neuron_k8s

#include "testing/fake_pod_resources.h"

#include <map>

#include "grpcpp/grpcpp.h"

namespace neuron::testing {

std::unique_ptr<FakePodResources> FakePodResources::Serve(const std::string& socket_path) {
  std::unique_ptr<FakePodResources> fake(new FakePodResources());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
  builder.RegisterService(fake.get());
  fake->server_ = builder.BuildAndStart();
  if (fake->server_ == nullptr) return nullptr;
  return fake;
}

FakePodResources::~FakePodResources() { Stop(); }

void FakePodResources::SetContainers(const std::vector<FakeContainer>& containers) {
  absl::MutexLock lock(&mutex_);
  pods_.Clear();
  std::map<std::string, v1::PodResources*> by_pod;
  for (const FakeContainer& container : containers) {
    v1::PodResources*& pod = by_pod[container.pod_namespace + "/" + container.pod];
    if (pod == nullptr) {
      pod = pods_.add_pod_resources();
      pod->set_name(container.pod);
      pod->set_namespace_(container.pod_namespace);
    }
    v1::ContainerResources* resources = pod->add_containers();
    resources->set_name(container.container);
    v1::ContainerDevices* devices = resources->add_devices();
    devices->set_resource_name(container.resource_name);
    for (const std::string& id : container.device_ids) devices->add_device_ids(id);
  }
}

void FakePodResources::Stop() {
  if (server_ != nullptr) server_->Shutdown();
}

uint64_t FakePodResources::lists() const {
  absl::MutexLock lock(&mutex_);
  return lists_;
}

grpc::Status FakePodResources::List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                                    v1::ListPodResourcesResponse* response) {
  absl::MutexLock lock(&mutex_);
  ++lists_;
  *response = pods_;
  return grpc::Status::OK;
}

}  // namespace neuron::testing

// The kubelet's pod-resources API (v1 PodResourcesLister) served on a
// socket, with the pods a test sets: what the device plugin and the
// exporter read to know which pod holds which cores.
#ifndef NEURON_TESTS_TESTING_FAKE_POD_RESOURCES_H_
#define NEURON_TESTS_TESTING_FAKE_POD_RESOURCES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/server.h"
#include "k8s/podresources/v1/api.grpc.pb.h"

namespace neuron::testing {

// One container holding `device_ids` of `resource_name`.
struct FakeContainer {
  std::string pod;
  std::string pod_namespace = "default";
  std::string container = "main";
  std::string resource_name = "aws.amazon.com/neuroncore";
  std::vector<std::string> device_ids;
};

// Thread-safety: every method may be called from any thread while gRPC's
// threads answer List.
class FakePodResources final : public v1::PodResourcesLister::Service {
 public:
  // Serves on `socket_path` until Stop or destruction; null when it cannot.
  static std::unique_ptr<FakePodResources> Serve(const std::string& socket_path);
  ~FakePodResources() override;

  // What List answers from now on; one PodResources per distinct pod.
  void SetContainers(const std::vector<FakeContainer>& containers);
  // The kubelet going away: the socket stops answering.
  void Stop();
  // List calls answered so far.
  uint64_t lists() const;

  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override;

 private:
  FakePodResources() = default;

  std::unique_ptr<grpc::Server> server_;
  mutable absl::Mutex mutex_;
  v1::ListPodResourcesResponse pods_ ABSL_GUARDED_BY(mutex_);
  uint64_t lists_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace neuron::testing

#endif  // NEURON_TESTS_TESTING_FAKE_POD_RESOURCES_H_

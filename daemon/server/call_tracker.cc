#include "daemon/server/call_tracker.h"

namespace neuron::rtd {
namespace {

class CountingInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit CountingInterceptor(CallTracker& tracker) : tracker_(tracker) { tracker_.Begin(); }
  ~CountingInterceptor() override { tracker_.End(); }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    methods->Proceed();
  }

 private:
  CallTracker& tracker_;
};

}  // namespace

void CallTracker::Begin() {
  absl::MutexLock lock(&mutex_);
  ++active_;
}

void CallTracker::End() {
  absl::MutexLock lock(&mutex_);
  --active_;
}

bool CallTracker::WaitIdle(absl::Duration timeout) {
  absl::MutexLock lock(&mutex_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return active_ == 0; };
  return mutex_.AwaitWithTimeout(absl::Condition(&idle), timeout);
}

grpc::experimental::Interceptor* CallTrackerFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo*) {
  return new CountingInterceptor(tracker_);
}

}  // namespace neuron::rtd

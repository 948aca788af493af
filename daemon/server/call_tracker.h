// Counts the RPCs in flight, so that a stopping daemon waits for the calls
// it has (up to its grace period) instead of for its clients to hang up:
// grpc::Server::Shutdown with a deadline waits out the deadline while any
// client keeps its connection open, even with no call in flight.
#ifndef NEURON_RTD_DAEMON_SERVER_CALL_TRACKER_H_
#define NEURON_RTD_DAEMON_SERVER_CALL_TRACKER_H_

#include <grpcpp/support/server_interceptor.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace neuron::rtd {

// Thread-safety: every method may be called from any thread.
class CallTracker {
 public:
  void Begin();
  void End();
  // True once no call is in flight; false when `timeout` passed first.
  bool WaitIdle(absl::Duration timeout);

 private:
  absl::Mutex mutex_;
  int active_ ABSL_GUARDED_BY(mutex_) = 0;
};

// One interceptor per call: counted from its creation to its destruction.
// Lifetime: the tracker outlives the server.
class CallTrackerFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit CallTrackerFactory(CallTracker& tracker) : tracker_(tracker) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  CallTracker& tracker_;
};

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_SERVER_CALL_TRACKER_H_

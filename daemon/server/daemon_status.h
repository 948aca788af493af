// The daemon's own state, as Admin.Health reports it.
#ifndef NEURON_RTD_DAEMON_SERVER_DAEMON_STATUS_H_
#define NEURON_RTD_DAEMON_SERVER_DAEMON_STATUS_H_

#include <atomic>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "neuron/rtd/v1/admin.pb.h"

namespace neuron::rtd {

// Thread-safety: all methods may be called from any thread.
class DaemonStatus {
 public:
  DaemonStatus() : started_(absl::Now()) {}

  v1::ServingState state() const { return state_.load(std::memory_order_acquire); }
  void set_state(v1::ServingState state) { state_.store(state, std::memory_order_release); }
  absl::Duration uptime() const { return absl::Now() - started_; }
  absl::Time started() const { return started_; }

 private:
  const absl::Time started_;
  std::atomic<v1::ServingState> state_{v1::SERVING_STATE_SERVING};
};

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_SERVER_DAEMON_STATUS_H_

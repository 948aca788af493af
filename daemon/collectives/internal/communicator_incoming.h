// Communicator::Incoming, the claim the exchange thread's steps wait on
// (communicator_exchange.cc, communicator_all_reduce.cc).
//
// Thread-safety: `take` runs on the progress thread under the mailbox's
// lock; Wait on the exchange thread.
// Lifetime: lives within one collective's step on the exchange thread; the
// communicator outlives it.
#ifndef NEURON_RTD_DAEMON_COLLECTIVES_INTERNAL_COMMUNICATOR_INCOMING_H_
#define NEURON_RTD_DAEMON_COLLECTIVES_INTERNAL_COMMUNICATOR_INCOMING_H_

#include <functional>
#include <memory>
#include <span>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "daemon/collectives/communicator.h"

namespace neuron::rtd::collectives {

// A claim on what `host` sends for one step of collective `op.sequence`:
// each piece is checked and handed to `use` on the progress thread as it
// arrives, straight from the receive buffer. `finished` (optional) runs once
// with the outcome when the last byte has been used, or on the first
// error. The destructor withdraws the claim.
class Communicator::Incoming {
 public:
  Incoming(Communicator& communicator, uint32_t host, StepId step,
           const neuron_rtd_collective_op& op, uint64_t expected, IncomingUse use,
           std::function<void(const absl::Status&)> finished = nullptr)
      : communicator_(communicator),
        host_(host),
        op_(op),
        key_{.type = NEURON_RTD_FABRIC_DATA, .phase = step.phase, .index = op.sequence,
             .step = step.step, .source_host = host},
        state_(std::make_shared<State>()) {
    HostMailbox::Claim claim;
    claim.take = [state = state_, this, expected, algorithm = step.algorithm,
                  use = std::move(use)](const neuron_rtd_fabric_header& header,
                                        std::span<const uint8_t> payload) {
      if (absl::Status agreed = communicator_.CheckRemote(header, op_); !agreed.ok()) {
        state->error = agreed;
        return true;
      }
      if (header.algorithm != algorithm) {
        state->error = absl::InvalidArgumentError(absl::StrFormat(
            "collective #%d: host %d runs it by %s, this host by %s", op_.sequence, host_,
            AlgorithmName(header.algorithm), AlgorithmName(algorithm)));
        return true;
      }
      if (payload.size() > expected - state->received) {
        state->error = absl::InvalidArgumentError(absl::StrFormat(
            "host %d sent more than the %d bytes collective #%d moves to this host", host_,
            expected, op_.sequence));
        return true;
      }
      if (!payload.empty()) {
        if (absl::Status used = use(header.offset, payload); !used.ok()) {
          state->error = used;
          return true;
        }
      }
      state->received += payload.size();
      return state->received >= expected;
    };
    claim.done = [state = state_, finished = std::move(finished)](const absl::Status& status) {
      state->status = status;
      if (finished) finished(status.ok() ? state->error : status);
      state->finished.Notify();
    };
    communicator_.mailbox_.AddClaim(key_, std::move(claim));
  }
  Incoming(const Incoming&) = delete;
  Incoming& operator=(const Incoming&) = delete;
  // Once it returns, neither `use` nor `finished` runs any more.
  ~Incoming() {
    if (!withdrawn_ && !communicator_.mailbox_.RemoveClaim(key_)) {
      state_->finished.WaitForNotification();
    }
  }

  absl::Status Wait(absl::Time deadline) {
    if (!state_->finished.WaitForNotificationWithDeadline(deadline)) {
      if (communicator_.mailbox_.RemoveClaim(key_)) {
        withdrawn_ = true;
        return absl::DeadlineExceededError(absl::StrFormat(
            "collective #%d waited more than %s for host %d (rank(s) %s)", op_.sequence,
            absl::FormatDuration(communicator_.timeout_), host_,
            absl::StrJoin(communicator_.topology_->ranks_of_host[host_], ",")));
      }
      state_->finished.WaitForNotification();
    }
    return state_->status.ok() ? state_->error : state_->status;
  }

 private:
  // Written under the mailbox's lock (take) or before `finished`.
  struct State {
    uint64_t received = 0;
    absl::Status error;
    absl::Status status;
    absl::Notification finished;
  };
  Communicator& communicator_;
  const uint32_t host_;
  const neuron_rtd_collective_op op_;
  const MailKey key_;
  const std::shared_ptr<State> state_;
  // Wait gave up on the claim: neither `take` nor `done` runs again.
  bool withdrawn_ = false;
};

}  // namespace neuron::rtd::collectives

#endif  // NEURON_RTD_DAEMON_COLLECTIVES_INTERNAL_COMMUNICATOR_INCOMING_H_

// A transport between daemons of different hosts: whole messages to peers
// named by their opaque addresses, delivered to one handler.
//
// Thread-safety: every method may be called from any thread; the handlers
// run on the transport's own progress thread, one call at a time.
// Lifetime: handlers must stay callable until the transport is destroyed.
#ifndef NEURON_RTD_DAEMON_FABRIC_TRANSPORT_H_
#define NEURON_RTD_DAEMON_FABRIC_TRANSPORT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace neuron::rtd::fabric {

// A peer added to the transport (AddPeer), valid for the transport's life.
using PeerId = uint64_t;

struct TransportHandlers {
  // A message arrived: its bytes, valid only during the call.
  std::function<void(std::span<const uint8_t> message)> on_message;
  // A message to `peer` could not be delivered (the peer is gone or
  // unreachable).
  std::function<void(PeerId peer, const absl::Status& why)> on_send_failed;
};

// Sends that read the caller's memory in place, until they complete.
// Thread-safety: any thread.
class SendTracker {
 public:
  void Started() {
    absl::MutexLock lock(&mutex_);
    ++in_flight_;
  }
  void Finished(const absl::Status& status) {
    absl::MutexLock lock(&mutex_);
    --in_flight_;
    if (error_.ok()) error_ = status;
  }
  // Waits until every send started has finished (DEADLINE_EXCEEDED at
  // `deadline`); the first failure.
  absl::Status Wait(absl::Time deadline) {
    absl::MutexLock lock(&mutex_);
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return in_flight_ == 0; };
    if (!mutex_.AwaitWithDeadline(absl::Condition(&idle), deadline)) {
      return absl::DeadlineExceededError("sends to other hosts did not complete in time");
    }
    return error_;
  }

 private:
  absl::Mutex mutex_;
  uint64_t in_flight_ ABSL_GUARDED_BY(mutex_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mutex_);
};

class Transport {
 public:
  virtual ~Transport() = default;

  // This endpoint's address (opaque bytes, what peers pass to AddPeer).
  virtual const std::string& address() const = 0;
  // E.g. "tcp;ofi_rxm on lo", for logs and listings.
  virtual const std::string& description() const = 0;
  // The longest message Send takes.
  virtual size_t max_message_bytes() const = 0;

  // The peer at `address`; the same id each time for the same address.
  // INVALID_ARGUMENT when the address is not one of this provider's.
  virtual absl::StatusOr<PeerId> AddPeer(std::string_view address) = 0;

  // Sends `header` then `payload` as one message (both copied before it
  // returns). Waits while every send buffer is in flight, until `deadline`
  // (DEADLINE_EXCEEDED). Delivery failures come later through
  // on_send_failed.
  virtual absl::Status Send(PeerId peer, std::span<const uint8_t> header,
                            std::span<const uint8_t> payload, absl::Time deadline) = 0;

  // As Send, but `payload` is read in place (no copy): it must stay
  // unchanged and mapped until `tracker` says the send finished. Providers
  // that need registered memory (FI_MR_LOCAL) copy it as Send does.
  virtual absl::Status SendInPlace(PeerId peer, std::span<const uint8_t> header,
                                   std::span<const uint8_t> payload, absl::Time deadline,
                                   std::shared_ptr<SendTracker> tracker) = 0;
};

}  // namespace neuron::rtd::fabric

#endif  // NEURON_RTD_DAEMON_FABRIC_TRANSPORT_H_

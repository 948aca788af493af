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
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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
};

}  // namespace neuron::rtd::fabric

#endif  // NEURON_RTD_DAEMON_FABRIC_TRANSPORT_H_

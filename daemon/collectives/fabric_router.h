// The daemon's endpoint for collectives between hosts, and the
// communicators that receive from it, by group key. Messages for a key no
// communicator has yet are dropped, except HELLOs (bounded), which wait for
// the communicator that is still gathering its ranks.
//
// Thread-safety: every method may be called from any thread; receivers are
// called on the transport's progress thread.
// Lifetime: outlives every communicator (the registry's owner destroys the
// registry first).
#ifndef NEURON_RTD_DAEMON_COLLECTIVES_FABRIC_ROUTER_H_
#define NEURON_RTD_DAEMON_COLLECTIVES_FABRIC_ROUTER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/fabric/libfabric_transport.h"
#include "daemon/fabric/transport.h"
#include "neuron/rtd/abi/fabric_message.h"

namespace neuron::rtd::collectives {

class FabricReceiver {
 public:
  virtual ~FabricReceiver() = default;
  // A checked message of this receiver's key (header fields other than the
  // magic, version, key and length are the receiver's to check).
  virtual void Receive(const neuron_rtd_fabric_header& header,
                       std::span<const uint8_t> payload) = 0;
  // Messages to `peer` are not delivered.
  virtual void PeerFailed(fabric::PeerId peer, const absl::Status& why) = 0;
};

class FabricRouter {
 public:
  static absl::StatusOr<std::unique_ptr<FabricRouter>> Open(const fabric::FabricOptions& options);
  FabricRouter(const FabricRouter&) = delete;
  FabricRouter& operator=(const FabricRouter&) = delete;
  ~FabricRouter();

  fabric::Transport& transport() { return *transport_; }
  const std::string& address() const { return transport_->address(); }
  const std::string& description() const { return transport_->description(); }

  // Routes `key`'s messages to `receiver` until it is gone or unregistered,
  // and hands it the HELLOs that came first. ALREADY_EXISTS when a live
  // receiver has the key.
  absl::Status Register(const std::string& key, std::weak_ptr<FabricReceiver> receiver);
  void Unregister(const std::string& key);

  // Messages dropped: malformed, or for no receiver.
  uint64_t dropped() const;

  // Checks a message as it came off the fabric and hands it to its
  // receiver (the transport's handler; tests and the fuzzer call it too).
  void Route(std::span<const uint8_t> message);

  // HELLOs kept for keys nobody registered yet.
  static constexpr size_t kMaxEarlyHellos = 1024;

 private:
  FabricRouter() = default;
  void OnSendFailed(fabric::PeerId peer, const absl::Status& why);

  std::unique_ptr<fabric::Transport> transport_;
  mutable absl::Mutex mutex_;
  std::map<std::string, std::weak_ptr<FabricReceiver>, std::less<>> receivers_
      ABSL_GUARDED_BY(mutex_);
  struct EarlyHello {
    std::string key;
    neuron_rtd_fabric_header header;
  };
  std::deque<EarlyHello> early_hellos_ ABSL_GUARDED_BY(mutex_);
  uint64_t dropped_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace neuron::rtd::collectives

#endif  // NEURON_RTD_DAEMON_COLLECTIVES_FABRIC_ROUTER_H_

// The Transport over libfabric: one reliable-datagram (FI_EP_RDM) endpoint
// with FI_MSG, as the `efa` provider offers on trn hosts and `tcp;ofi_rxm`
// anywhere. Messages are copied into pre-registered buffers (so providers
// that need registered local memory, FI_MR_LOCAL, work), and one progress
// thread reads the completion queue: it delivers received messages,
// reposts their buffers and frees send buffers.
//
// Thread-safety and lifetime: see transport.h; the destructor stops the
// progress thread, then closes the endpoint, before the library unloads.
#ifndef NEURON_RTD_DAEMON_FABRIC_LIBFABRIC_TRANSPORT_H_
#define NEURON_RTD_DAEMON_FABRIC_LIBFABRIC_TRANSPORT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/fabric/transport.h"

namespace neuron::rtd::fabric {

struct FabricOptions {
  // The library dlopen loads.
  std::string library = "libfabric.so.1";
  // libfabric's provider name: "efa" on trn hosts, "tcp;ofi_rxm" elsewhere.
  std::string provider;
  // The domain (for tcp, the network interface, e.g. "eth0" or "lo");
  // empty: the provider's first.
  std::string interface;
  // Messages in flight at once from this daemon, and receive buffers posted.
  uint32_t send_buffers = 32;
  uint32_t receive_buffers = 64;
};

// Every daemon's messages are at most this long (header included); the
// receive buffers are this long.
inline constexpr size_t kFabricMessageBytes = 1 << 20;

absl::StatusOr<std::unique_ptr<Transport>> OpenLibfabricTransport(const FabricOptions& options,
                                                                  TransportHandlers handlers);

}  // namespace neuron::rtd::fabric

#endif  // NEURON_RTD_DAEMON_FABRIC_LIBFABRIC_TRANSPORT_H_

// Which neuron-rtd a client talks to.
#ifndef NEURONRT_ADDRESS_H_
#define NEURONRT_ADDRESS_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace neuronrt {

struct DaemonAddress {
  // A gRPC target, always "unix:/absolute/path".
  std::string target;
  // The socket's path (target without its scheme).
  std::string socket_path;
  // Where the address came from, for messages: "--address",
  // "NEURON_RTD_ADDRESS", "per-user socket" or "system socket".
  std::string origin;
};

// The daemon to use: `explicit_address` when not empty, else
// $NEURON_RTD_ADDRESS, else the per-user socket when it exists, else the
// system socket when it exists, else the per-user socket (where an
// automatically started daemon listens). INVALID_ARGUMENT, naming the value
// and its origin, for an address that is not "unix:/absolute/path".
absl::StatusOr<DaemonAddress> ResolveDaemonAddress(std::string_view explicit_address = {});

// A per-user socket directory must be a real directory (not a symlink) owned
// by this process's user, with no access for group or others: under /tmp any
// local user could create it first and serve a daemon there. Client::Connect
// checks it for the per-user socket; whoever creates the directory checks it
// too. PERMISSION_DENIED naming the owner and mode otherwise.
absl::Status CheckPrivateDirectory(const std::string& directory);

}  // namespace neuronrt

#endif  // NEURONRT_ADDRESS_H_

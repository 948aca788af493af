// Where neuron-rtd listens by default: the convention that the daemon and
// every client share (ARCHITECTURE.md §4).
//
// Thread-safety: the functions read the environment; call them before other
// threads change it.
#ifndef NEURON_RTD_SOCKET_PATHS_H_
#define NEURON_RTD_SOCKET_PATHS_H_

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace neuron::rtd {

// The host-wide daemon run by systemd.
inline constexpr std::string_view kSystemSocketPath = "/run/neuron-rtd/neuron-rtd.sock";

// The account the system daemon runs as (deploy/systemd/neuron-rtd.sysusers.conf):
// besides the user and root, the only one a client trusts to serve a socket.
inline constexpr const char* kDaemonUser = "neuron-rtd";

// The environment variable that names the daemon to clients, as "unix:PATH".
inline constexpr std::string_view kAddressEnvVar = "NEURON_RTD_ADDRESS";

inline constexpr std::string_view kUnixAddressScheme = "unix:";

// Directory of a per-user daemon's socket: $XDG_RUNTIME_DIR when set
// (systemd makes it private to the user), else /tmp/neuron-rtd-$UID, which the
// daemon creates with mode 0700.
inline std::string PerUserSocketDir() {
  const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR");
  if (runtime_dir != nullptr && runtime_dir[0] == '/') return runtime_dir;
  return "/tmp/neuron-rtd-" + std::to_string(::getuid());
}

inline std::string PerUserSocketPath() { return PerUserSocketDir() + "/neuron-rtd.sock"; }

}  // namespace neuron::rtd

#endif  // NEURON_RTD_SOCKET_PATHS_H_

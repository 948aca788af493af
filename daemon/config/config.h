// The configuration of neuron-rtd: a TOML file (deploy/neuron-rtd.toml shows
// every key) and command-line flags that override it. Every key is checked;
// an unknown key or a bad value is an error that names the key, the value
// and where it came from.
#ifndef NEURON_RTD_DAEMON_CONFIG_CONFIG_H_
#define NEURON_RTD_DAEMON_CONFIG_CONFIG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace neuron::rtd {

// Used when --config is not given and this file exists.
inline constexpr std::string_view kDefaultConfigPath = "/etc/neuron-rtd/neuron-rtd.toml";

struct ServerConfig {
  // Empty: the system socket when running as root, else the per-user socket
  // (proto/neuron/rtd/socket_paths.h).
  std::string socket_path;
  // Group that may use the system socket (mode 0660). A per-user socket is
  // mode 0600 and ignores it.
  std::string socket_group = "neuron";
  // Largest gRPC message the daemon accepts or sends.
  uint64_t max_message_bytes = 64ull << 20;
  // How long a stopping daemon lets in-flight calls finish.
  uint32_t shutdown_timeout_ms = 5000;
  // gRPC connections one user (uid) may hold at once: a torch process holds
  // one, neuronctl one while it runs.
  uint32_t max_connections_per_user = 256;
  // Exit after this many seconds with no session and no call in flight; 0:
  // never. A daemon that torch_neuronx starts on its own sets it.
  uint32_t idle_exit_seconds = 0;
  // Where grants' socket directories are made; empty: "grants" beside the
  // socket.
  std::string grants_directory;
  uint32_t max_grants = 256;
};

struct LogConfig {
  std::string level = "info";  // trace, debug, info, warn, error, critical, off
};

struct DeviceConfig {
  // "sim" or "nrt".
  std::string backend = "sim";
  // libneuron_rtd_sim.so, the simulated backend and the nrt backend's host
  // execution path (empty: <the daemon's directory>/../lib/neuron-rtd/).
  std::string sim_plugin;
  // Physical NeuronCores per logical core (NEURON_LOGICAL_NC_CONFIG): 1 or 2;
  // 0 takes the platform's default.
  uint32_t logical_nc_config = 0;
  // nrt: libnrt's path (empty: libnrt.so.1, then
  // /opt/aws/neuron/lib/libnrt.so.1) and the cores to own
  // (NEURON_RT_VISIBLE_CORES syntax; empty: the environment's, else all).
  std::string nrt_library;
  std::string nrt_visible_cores;
  // nrt: where the Neuron driver's sysfs device directories are (a
  // container may mount the host's elsewhere).
  std::string nrt_sysfs_root = "/sys/devices/virtual/neuron_device";
};

struct SimConfig {
  std::string preset = "dev";
  // Host memory the CPU kernels of one launch may hold at once; a kernel
  // that asks for more fails as an operator error.
  uint64_t max_launch_host_bytes = 4ull << 30;
  // An executable whose launches take less than this many microseconds on
  // one host thread runs them on one thread: the kernels share the host's
  // cores with the clients. 0: always every thread.
  uint32_t parallel_launch_min_us = 400;
};

// Limits of each session (each client process).
struct SessionSettings {
  uint64_t max_hbm_bytes = 0;  // 0: no limit but the devices'
  uint32_t max_streams = 64;
  uint64_t max_ring_bytes = 4ull << 20;
  uint64_t staging_bytes = 64ull << 20;
  uint64_t max_host_memory_bytes = 16ull << 30;
  uint32_t attach_timeout_ms = 10000;
  uint32_t max_sessions = 1024;
  // Of those, sessions one user (uid) may have at once.
  uint32_t max_sessions_per_user = 256;
  // Data-plane connections not yet attached to a session, host-wide and per
  // user: each holds a file descriptor until it attaches or times out.
  uint32_t max_pending_connections = 256;
  uint32_t max_pending_connections_per_user = 64;
};

// The host-wide executable cache.
struct ExecutableSettings {
  // Bytes of every cached executable together (each charged its body plus a
  // fixed overhead); executables no session holds are evicted past it.
  uint64_t max_cache_bytes = 1ull << 30;
  // Bytes of the executables one user's sessions hold together.
  uint64_t max_bytes_per_user = 512ull << 20;
};

// How a core's queue shares it among sessions (daemon/queue/fair_queue.h).
inline constexpr uint32_t kMaxShareWeight = 1000;

struct SchedulerSettings {
  // Device time a session runs back to back while others wait.
  uint32_t quantum_us = 2000;
  // How far a session may run ahead of its fair share through
  // higher-priority streams.
  uint32_t priority_lead_ms = 100;
  // A waiting stream's priority rises one level per this much waiting.
  uint32_t priority_aging_ms = 20;
  // How long a core waits for the next command of the session in its turn
  // before turning to another session.
  uint32_t anticipation_us = 100;
  // A new session's weight (neuronctl share changes it)...
  uint32_t default_weight = 1;
  // ...unless its user has one here: [scheduler.user_weights], user name
  // (or numeric uid) = weight.
  std::map<std::string, uint32_t> user_weights;
};

// Tier 1 of graph executables (torch.compile): the compiler worker and the
// on-disk cache of what it compiled.
struct CompilerSettings {
  // Launches of a graph before it is compiled; 0: graphs stay interpreted.
  uint32_t compile_after_launches = 2;
  // The Python interpreter whose torch is the daemon's version; empty: the
  // one that installed the torch the simulated device runs (found from its
  // libtorch), else python3 from PATH.
  std::string python;
  // neuron_compile_worker.py; empty: the one in ../lib/neuron-rtd/ from the
  // neuron-rtd binary's directory.
  std::string worker;
  // Compiled graphs; empty: $CACHE_DIRECTORY (systemd), else
  // $XDG_CACHE_HOME/neuron-rtd, else ~/.cache/neuron-rtd.
  std::string cache_dir;
  uint64_t max_cache_bytes = 4ull << 30;
  // Longest one graph may take to compile.
  uint32_t timeout_seconds = 600;
  // Address space of the worker and the compilers it runs; 0: unlimited.
  uint64_t max_worker_memory_bytes = 16ull << 30;
};

// Collectives between hosts: the libfabric endpoint daemons reach each
// other by. Off unless a provider is set.
struct FabricSettings {
  // "efa" on trn hosts, "tcp;ofi_rxm" anywhere; empty: no fabric.
  std::string provider;
  // The provider's domain, e.g. a network interface ("eth0") for tcp;
  // empty: the provider's first.
  std::string interface;
  // The libfabric the daemon loads.
  std::string library = "libfabric.so.1";
  // All-reduces between hosts of at most this many bytes run by recursive
  // doubling, larger ones by the ring; the same on every host.
  uint64_t recursive_doubling_max_bytes = 64 << 10;
};

struct DaemonConfig {
  ServerConfig server;
  LogConfig log;
  DeviceConfig device;
  SimConfig sim;
  SessionSettings session;
  ExecutableSettings executables;
  SchedulerSettings scheduler;
  CompilerSettings compiler;
  FabricSettings fabric;
};

// Parses TOML text; `source` names it in errors (a path, or "<string>").
// Keys that are absent keep their defaults.
absl::StatusOr<DaemonConfig> ParseConfig(std::string_view toml, std::string_view source);

// Reads and parses a file. NOT_FOUND when it does not exist.
absl::StatusOr<DaemonConfig> LoadConfigFile(const std::string& path);

// Values given on the command line; each replaces its key.
struct ConfigOverrides {
  std::optional<std::string> socket_path;   // --socket
  std::optional<std::string> sim_preset;    // --sim-preset
  std::optional<std::string> log_level;     // --log-level
  std::optional<std::string> device_backend;  // --device-backend
  std::optional<std::string> nrt_library;     // --nrt-library
  std::optional<std::string> sim_plugin;      // --sim-plugin
  std::optional<int64_t> logical_nc_config; // --logical-nc-config
  std::optional<int64_t> idle_exit_seconds; // --idle-exit
  std::optional<std::string> compiler_python;       // --compiler-python
  std::optional<std::string> compiler_cache_dir;    // --compiler-cache-dir
  std::optional<int64_t> compile_after_launches;    // --compile-after-launches
  std::optional<std::string> fabric_provider;       // --fabric-provider
  std::optional<std::string> fabric_interface;      // --fabric-interface
};

// Checks each override as the file's keys are checked; errors name the flag.
absl::Status ApplyOverrides(const ConfigOverrides& overrides, DaemonConfig& config);

// The socket the daemon listens on: server.socket, else the default for the
// running user.
std::string EffectiveSocketPath(const ServerConfig& config);
// [server] grants_directory, or "grants" in the socket's directory.
std::string EffectiveGrantsDirectory(const ServerConfig& config);

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_CONFIG_CONFIG_H_

// Devices and cores as the daemon reports them.
#ifndef NEURONRT_DEVICE_INFO_H_
#define NEURONRT_DEVICE_INFO_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace neuronrt {

struct DeviceInfo {
  uint32_t index = 0;
  std::string instance_type;
  std::string architecture;  // "trainium2", "trainium3"
  std::string backend;       // "sim", "hardware"
  uint32_t physical_cores = 0;
  uint32_t logical_nc_config = 0;
  // Host-wide indices of the device's logical cores (NEURON_RT_VISIBLE_CORES
  // numbering).
  std::vector<uint32_t> cores;
  uint64_t hbm_total_bytes = 0;
  uint64_t hbm_used_bytes = 0;
  std::vector<uint32_t> connected_devices;
  std::string bus_id;
  // Stream priorities run from 0 (default, lowest) to
  // -(stream_priority_levels - 1) (highest).
  uint32_t stream_priority_levels = 1;
  // Cores that stopped (an unrecoverable fault), by host-wide index: why.
  std::map<uint32_t, std::string> core_faults;
  // Where the daemon learned this description: "sim", "sysfs" (the Neuron
  // driver's) or "libnrt" (core counts only).
  std::string topology_source;
};

// The peer the daemon saw on the caller's connection.
struct PeerIdentity {
  int32_t pid = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
};

// The daemon's compiler of hot graphs and its disk cache.
struct CompilerInfo {
  bool enabled = false;
  uint64_t compile_after_launches = 0;
  uint64_t builds = 0;
  uint64_t failures = 0;
  uint64_t disk_hits = 0;
  uint64_t queued = 0;
  uint64_t worker_starts = 0;
  double build_seconds = 0;
  // Why the compiler worker cannot be used, when it cannot.
  std::string unavailable;
  // A worker runs with the daemon's torch: `python`, with torch
  // `worker_torch_version`. Neither ready nor unavailable: still starting.
  bool ready = false;
  std::string python;
  std::string worker_torch_version;
  uint64_t disk_entries = 0;
  uint64_t disk_bytes = 0;
  std::string disk_path;
};

struct HealthInfo {
  std::string state;  // "serving", "draining", "stopping"
  std::string daemon_version;
  int32_t daemon_pid = 0;
  uint64_t uptime_ms = 0;
  std::string backend;
  uint32_t device_count = 0;
  uint32_t core_count = 0;
  PeerIdentity caller;
  // Cores that stopped, by host-wide index: why. The daemon serves the rest.
  std::map<uint32_t, std::string> failed_cores;
  // Whether graphs can be compiled (no disk figures).
  CompilerInfo compiler;

  bool serving() const { return state == "serving"; }
  // Serving with every core working.
  bool healthy() const { return serving() && failed_cores.empty(); }
};

// A session as `neuronctl ps` shows it.
struct SessionInfo {
  uint64_t session_id = 0;
  PeerIdentity owner;
  std::string client_name;
  std::vector<uint32_t> cores;
  uint64_t hbm_used_bytes = 0;
  uint32_t stream_count = 0;
  uint64_t commands_completed = 0;
  uint64_t commands_failed = 0;
  uint64_t opened_at_unix_ms = 0;
  // Executables the session holds.
  uint32_t executable_count = 0;
  // Its weight in its cores' fair queues; device time its commands took;
  // the fraction of one core's time they took over about the last 5 s.
  uint32_t share_weight = 1;
  uint64_t device_time_ns = 0;
  double recent_core_share = 0;
  // Commands submitted and not yet started.
  uint64_t queued_commands = 0;
};

// One cached executable (`neuronctl cache ls`).
struct CachedExecutable {
  uint64_t executable_id = 0;
  std::string name;
  std::string kind;  // "eager_op", "graph" or "neff"
  uint64_t bytes = 0;
  // Users whose sessions hold it; 0: it may be evicted.
  uint32_t holders = 0;
  uint64_t launches = 0;
  // 0: as described (eager ops, interpreted graphs); 1: compiled code.
  uint32_t tier = 0;
  // Graphs: "interpreted", "compiling", "compiled", or "interpreted (why)".
  std::string compile_state;
  double compile_seconds = 0;
  // On the simulator: the host threads its launches use (1, or every
  // thread); 0 while not decided.
  uint32_t host_threads = 0;
  // Graphs, with a compiler: its package's key, and whether the disk cache
  // holds it or why not (`neuronctl cache why`).
  std::string compile_key;
  std::string disk_cache;
};

// The daemon's executable cache (`neuronctl cache`).
struct CacheInfo {
  uint64_t entries = 0;
  // Charged bytes: bodies plus a fixed overhead per executable.
  uint64_t memory_bytes = 0;
  // Executables some live session holds; the rest may be evicted.
  uint64_t held_entries = 0;
  uint64_t held_bytes = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
  uint64_t max_bytes = 0;
  uint64_t max_bytes_per_user = 0;
  CompilerInfo compiler;
  // Filled when asked for (GetCacheInfo(true)).
  std::vector<CachedExecutable> executables;
};

// What ClearCache removed.
struct ClearedCache {
  uint64_t entries = 0;
  uint64_t disk_entries = 0;
};

// A communicator (process group) of the host (`neuronctl groups`).
struct CommunicatorInfo {
  std::string name;
  uint32_t size = 0;
  // By rank ("session 7, pid 1234", or "on host 1" for another host's);
  // empty for a rank that has not joined.
  std::vector<std::string> members;
  uint64_t collectives_completed = 0;
  uint64_t operations_pending = 0;
  // Why it was aborted; empty while it works.
  std::string aborted;
  // Hosts (daemons) its ranks span, and this daemon's index among them.
  uint32_t hosts = 1;
  uint32_t host = 0;
};

// A grant: cores and an HBM quota served on a socket directory of their own
// (`neuronctl grant`; the Kubernetes device plugin).
struct GrantInfo {
  std::string grant_id;
  std::vector<uint32_t> cores;
  // 0: no quota.
  uint64_t hbm_quota_bytes = 0;
  uint64_t hbm_used_bytes = 0;
  std::string label;
  // Holds neuron-rtd.sock and neuron-rtd.sock.data: what a container mounts.
  std::string directory;
  uint32_t session_count = 0;
  uint64_t created_at_unix_ms = 0;
};

struct RuntimeInfo {
  std::string daemon_version;
  uint32_t abi_version_major = 0;
  uint32_t abi_version_minor = 0;
  std::string backend;
  // Identifies the daemon (one per host): ranks that see the same bytes
  // share it.
  std::string instance_id;
  // The daemon's fabric endpoint for collectives between hosts; empty when
  // it has none.
  std::string fabric_address;
  std::string fabric_description;
};

}  // namespace neuronrt

#endif  // NEURONRT_DEVICE_INFO_H_

// The daemon's counters (`neuronctl stats`, `neuronctl top`, the
// Prometheus exporter): cumulative since the daemon started unless a field
// says "now".
#ifndef NEURONRT_STATS_H_
#define NEURONRT_STATS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "neuronrt/device_info.h"

namespace neuronrt {

// Commands of one kind that ended one way.
struct CommandCount {
  // "launch", "copy", "fill", "wait", "signal", "collective", "marker",
  // "invalid" (records the daemon refused to decode).
  std::string kind;
  // "completed", "rejected" (the operator refused its arguments; the stream
  // went on), "failed" (it failed its stream), "timed_out" (it failed its
  // stream by running out of time), "abandoned" (its stream had failed
  // before it ran).
  std::string outcome;
  uint64_t count = 0;
};

// One core's counters since the daemon started (`neuronctl stats`).
struct CoreStats {
  uint32_t core = 0;
  // Compute and DMA engine time per wall second: 0 to 2.
  double utilization = 0;
  uint64_t executions_completed = 0;
  uint64_t executions_failed = 0;
  // Commands that failed their stream by running out of time (collectives
  // whose peers did not come in time).
  uint64_t executions_timed_out = 0;
  // Engine time since the daemon started, cumulative.
  uint64_t busy_ns = 0;
  // The share of about the last second the compute engine was busy, 0 to 1.
  double recent_compute_utilization = 0;
  // Launches that ran on the host CPU instead of the core (real Trainium's
  // host execution path); 0 on the simulator.
  uint64_t host_executed_launches = 0;
  // Execution time percentiles, upper bounds of power-of-two buckets.
  uint64_t latency_p50_ns = 0;
  uint64_t latency_p99_ns = 0;
  uint64_t latency_max_ns = 0;
  // busy_ns by engine: compute (launches, fills, collectives) and DMA
  // (copies).
  uint64_t compute_busy_ns = 0;
  uint64_t dma_busy_ns = 0;
  // Every command's execution time: bucket i counts commands that took
  // [2^(i-1), 2^i) ns (64 buckets), and the sum of those times.
  std::vector<uint64_t> execution_ns_log2_buckets;
  uint64_t execution_ns_sum = 0;
  std::vector<CommandCount> commands;
  // Commands submitted to the core's streams and not yet started, now.
  uint64_t queued_commands = 0;
};

// The driver's ECC event counts since the device was last reset or the host
// booted; nullopt: not reported.
struct EccCounts {
  std::optional<uint64_t> mem_corrected;
  std::optional<uint64_t> mem_uncorrected;
  // In rows the device can repair at its next reset.
  std::optional<uint64_t> mem_repairable_uncorrected;
  std::optional<uint64_t> sram_corrected;
  std::optional<uint64_t> sram_uncorrected;
};

struct DeviceStats {
  uint32_t device_index = 0;
  // HBM held by sessions' tensors, now.
  uint64_t tensors_bytes = 0;
  uint64_t hbm_total_bytes = 0;
  uint64_t hbm_largest_free_bytes = 0;
  uint64_t hbm_segments = 0;
  // HBM held below the daemon besides its own (the runtime's own, and loaded
  // programs unless `programs` tells them apart); nullopt when the backend
  // cannot tell.
  std::optional<uint64_t> runtime_bytes;
  // Loaded programs' HBM by part, where the backend tells them apart (the
  // Neuron driver's accounting on hardware).
  struct ProgramBytes {
    uint64_t model_code = 0;
    uint64_t constants = 0;
    uint64_t scratchpad = 0;
  };
  std::optional<ProgramBytes> programs;
  // A core's HBM as the runtime below the daemon accounts it (neuron-
  // monitor's neuroncore_memory_usage): `tensors` are the runtime's tensors
  // on the core, the daemon's allocations among them.
  struct CoreMemory {
    uint32_t core = 0;
    uint64_t tensors = 0;
    uint64_t model_code = 0;
    uint64_t constants = 0;
    uint64_t scratchpad = 0;
    uint64_t runtime = 0;
  };
  // Empty when the backend cannot tell (the simulator).
  std::vector<CoreMemory> core_memory;
  EccCounts ecc;
};

struct CollectiveCount {
  // "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
  // "send" (a send with its receive), "barrier".
  std::string kind;
  std::string outcome;  // "completed", "failed"
  uint64_t count = 0;
  uint64_t bytes = 0;
};

struct DaemonStats {
  std::string version;
  std::string backend;  // "sim", "hardware"
  std::string state;    // "serving", "draining", "stopping"
  uint64_t start_time_unix_ms = 0;
  uint64_t sessions_opened = 0;
  uint64_t sessions_live = 0;
  // By reason: "closed", "client_died", "killed", "device_reset",
  // "attach_timeout", "attach_failed", "daemon_stopping", "grant_revoked".
  std::map<std::string, uint64_t> sessions_ended;
  CacheInfo executables;
  uint64_t communicators_live = 0;
  std::vector<CollectiveCount> collectives;
  // Of the daemon process.
  double cpu_user_seconds = 0;
  double cpu_system_seconds = 0;
  uint64_t resident_memory_bytes = 0;
};

struct Stats {
  // The daemon's uptime: what cumulative figures cover.
  uint64_t interval_ms = 0;
  std::vector<CoreStats> cores;
  std::vector<DeviceStats> devices;
  DaemonStats daemon;
};

}  // namespace neuronrt

#endif  // NEURONRT_STATS_H_

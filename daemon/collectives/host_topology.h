// Where the ranks of a communicator live when they span hosts: one daemon
// per host serves its own ranks and reaches the others' daemons over the
// fabric.
//
// Thread-safety: immutable once built.
#ifndef NEURON_RTD_DAEMON_COLLECTIVES_HOST_TOPOLOGY_H_
#define NEURON_RTD_DAEMON_COLLECTIVES_HOST_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace neuron::rtd::collectives {

struct HostTopology {
  // This daemon's index in `addresses`.
  uint32_t host = 0;
  // The fabric address of each host's daemon.
  std::vector<std::string> addresses;
  // Each host's global ranks, ascending.
  std::vector<std::vector<uint32_t>> ranks_of_host;
  // By global rank.
  std::vector<uint32_t> host_of_rank;
  // NEURON_RTD_FABRIC_GROUP_KEY_BYTES bytes naming the communicator between
  // the daemons.
  std::string group_key;

  uint32_t hosts() const { return static_cast<uint32_t>(addresses.size()); }
  uint32_t world_size() const { return static_cast<uint32_t>(host_of_rank.size()); }
  const std::vector<uint32_t>& local_ranks() const { return ranks_of_host[host]; }
  bool IsLocal(uint32_t rank) const { return host_of_rank[rank] == host; }
  // Identical on every daemon that was given the same hosts (in HELLO).
  uint64_t Fingerprint() const;
};

// Hosts at most, as a communicator's ranks at most (kMaxRanks).
inline constexpr uint32_t kMaxHosts = 4096;

// Checks what a client sent: `host` indexes `addresses`, at least two hosts,
// each with at least one rank, every rank of [0, world_size) in exactly one
// host and listed ascending, addresses of 1 to 256 bytes, a key of the
// right length. INVALID_ARGUMENT naming the first problem.
absl::StatusOr<HostTopology> MakeHostTopology(uint32_t host, std::vector<std::string> addresses,
                                              std::vector<std::vector<uint32_t>> ranks_of_host,
                                              uint32_t world_size, std::string group_key);

}  // namespace neuron::rtd::collectives

#endif  // NEURON_RTD_DAEMON_COLLECTIVES_HOST_TOPOLOGY_H_

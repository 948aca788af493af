#include "daemon/collectives/host_topology.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "neuron/rtd/abi/fabric_message.h"

namespace neuron::rtd::collectives {
namespace {

// FNV-1a: stable across processes and builds (absl::Hash is seeded).
void Mix(uint64_t& hash, const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
}

}  // namespace

uint64_t HostTopology::Fingerprint() const {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t h = 0; h < addresses.size(); ++h) {
    const uint64_t length = addresses[h].size();
    Mix(hash, &length, sizeof(length));
    Mix(hash, addresses[h].data(), addresses[h].size());
    const uint64_t count = ranks_of_host[h].size();
    Mix(hash, &count, sizeof(count));
    Mix(hash, ranks_of_host[h].data(), ranks_of_host[h].size() * sizeof(uint32_t));
  }
  return hash;
}

absl::StatusOr<HostTopology> MakeHostTopology(uint32_t host, std::vector<std::string> addresses,
                                              std::vector<std::vector<uint32_t>> ranks_of_host,
                                              uint32_t world_size, std::string group_key) {
  if (addresses.size() < 2 || addresses.size() > kMaxHosts) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a communicator across hosts has 2 to %d hosts, not %d", kMaxHosts, addresses.size()));
  }
  if (ranks_of_host.size() != addresses.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d hosts have addresses but %d have ranks", addresses.size(), ranks_of_host.size()));
  }
  if (host >= addresses.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("host %d is not one of the %d hosts", host, addresses.size()));
  }
  if (group_key.size() != NEURON_RTD_FABRIC_GROUP_KEY_BYTES) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a group key has %d bytes, not %d", NEURON_RTD_FABRIC_GROUP_KEY_BYTES, group_key.size()));
  }
  HostTopology topology{.host = host, .group_key = std::move(group_key)};
  topology.host_of_rank.assign(world_size, kMaxHosts);
  for (uint32_t h = 0; h < addresses.size(); ++h) {
    if (addresses[h].empty() || addresses[h].size() > 256) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "host %d's fabric address has %d bytes (1 to 256)", h, addresses[h].size()));
    }
    if (ranks_of_host[h].empty()) {
      return absl::InvalidArgumentError(absl::StrFormat("host %d has no ranks", h));
    }
    for (size_t i = 0; i < ranks_of_host[h].size(); ++i) {
      const uint32_t rank = ranks_of_host[h][i];
      if (rank >= world_size) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "host %d lists rank %d of a communicator of %d", h, rank, world_size));
      }
      if (i > 0 && rank <= ranks_of_host[h][i - 1]) {
        return absl::InvalidArgumentError(
            absl::StrFormat("host %d's ranks are not listed ascending", h));
      }
      if (topology.host_of_rank[rank] != kMaxHosts) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "rank %d is on hosts %d and %d", rank, topology.host_of_rank[rank], h));
      }
      topology.host_of_rank[rank] = h;
    }
  }
  for (uint32_t rank = 0; rank < world_size; ++rank) {
    if (topology.host_of_rank[rank] == kMaxHosts) {
      return absl::InvalidArgumentError(absl::StrFormat("rank %d is on no host", rank));
    }
  }
  topology.addresses = std::move(addresses);
  topology.ranks_of_host = std::move(ranks_of_host);
  return topology;
}

}  // namespace neuron::rtd::collectives

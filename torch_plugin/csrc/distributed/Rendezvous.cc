#include "csrc/distributed/Rendezvous.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace torch_neuronx {
namespace {

// Store keys, under the group's own prefix.
constexpr char kCommunicatorIdKey[] = "neuron_communicator_id";
constexpr char kRankHostKey[] = "neuron_rank_host/";
constexpr char kGroupKeyKey[] = "neuron_fabric_group_key";
constexpr size_t kGroupKeyBytes = 16;

std::vector<uint8_t> ToBytes(const std::string& text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

std::string FromBytes(const std::vector<uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

// A rank's daemon as the store carries it: the instance id's length, the
// instance id, then the fabric address.
std::string EncodeDaemon(const neuronrt::RuntimeInfo& info) {
  std::string encoded(1, static_cast<char>(info.instance_id.size()));
  return encoded + info.instance_id + info.fabric_address;
}

struct RankDaemon {
  std::string instance_id;
  std::string fabric_address;
};

RankDaemon DecodeDaemon(const std::string& encoded, int rank) {
  const size_t length = encoded.empty() ? 0 : static_cast<uint8_t>(encoded[0]);
  if (encoded.empty() || encoded.size() < 1 + length) {
    C10_THROW_ERROR(DistBackendError,
                    c10::str("rank ", rank, "'s daemon identity in the store is malformed"));
  }
  return {encoded.substr(1, length), encoded.substr(1 + length)};
}

std::string RandomKey() {
  std::random_device source;
  std::string key(kGroupKeyBytes, '\0');
  for (char& byte : key) byte = static_cast<char>(source() & 0xff);
  return key;
}

neuronrt::Session::Communicator Join(neuronrt::Session& session, const std::string& id, int rank,
                                     int size, absl::Duration timeout,
                                     const neuronrt::Session::CommunicatorHosts* hosts) {
  absl::StatusOr<neuronrt::Session::Communicator> joined =
      session.InitCommunicator(id, static_cast<uint32_t>(rank), static_cast<uint32_t>(size),
                               timeout, timeout, hosts);
  if (!joined.ok()) {
    C10_THROW_ERROR(DistBackendError, c10::str("rank ", rank, " of ", size,
                                               " joining its neuron communicator: ",
                                               joined.status().message()));
  }
  return *std::move(joined);
}

std::string CreateId(neuronrt::Session& session) {
  absl::StatusOr<std::string> created = session.CreateCommunicatorId();
  if (!created.ok()) {
    C10_THROW_ERROR(DistBackendError,
                    c10::str("creating a neuron communicator: ", created.status().message()));
  }
  return *std::move(created);
}

}  // namespace

neuronrt::Session::Communicator JoinCommunicator(neuronrt::Session& session,
                                                 const c10::intrusive_ptr<c10d::Store>& store,
                                                 int rank, int size, absl::Duration timeout) {
  absl::StatusOr<neuronrt::RuntimeInfo> info = session.client().GetRuntimeInfo();
  if (!info.ok()) {
    C10_THROW_ERROR(DistBackendError, c10::str("asking neuron-rtd who it is: ",
                                               info.status().message()));
  }
  store->set(kRankHostKey + std::to_string(rank), ToBytes(EncodeDaemon(*info)));
  // Hosts in the order of their first rank; each host's ranks ascending.
  std::vector<std::string> instances;
  neuronrt::Session::CommunicatorHosts hosts;
  for (int other = 0; other < size; ++other) {
    const RankDaemon daemon =
        DecodeDaemon(FromBytes(store->get(kRankHostKey + std::to_string(other))), other);
    auto found = std::find(instances.begin(), instances.end(), daemon.instance_id);
    const size_t host = static_cast<size_t>(found - instances.begin());
    if (found == instances.end()) {
      instances.push_back(daemon.instance_id);
      hosts.fabric_addresses.push_back(daemon.fabric_address);
      hosts.ranks.emplace_back();
    }
    hosts.ranks[host].push_back(static_cast<uint32_t>(other));
    if (daemon.instance_id == info->instance_id) hosts.host = static_cast<uint32_t>(host);
  }
  if (instances.size() == 1) {
    std::string id;
    if (rank == 0) {
      id = CreateId(session);
      store->set(kCommunicatorIdKey, ToBytes(id));
    } else {
      id = FromBytes(store->get(kCommunicatorIdKey));
    }
    return Join(session, id, rank, size, timeout, nullptr);
  }
  for (size_t host = 0; host < instances.size(); ++host) {
    if (hosts.fabric_addresses[host].empty()) {
      C10_THROW_ERROR(
          DistBackendError,
          c10::str("the ranks of this group are served by ", instances.size(),
                   " neuron-rtd daemons (hosts), but the daemon of rank ", hosts.ranks[host][0],
                   " has no fabric to reach the others: start every host's daemon with a "
                   "[fabric] provider (--fabric-provider efa on trn hosts; see "
                   "docs/distributed.md)"));
    }
  }
  if (rank == 0) {
    hosts.group_key = RandomKey();
    store->set(kGroupKeyKey, ToBytes(hosts.group_key));
  } else {
    hosts.group_key = FromBytes(store->get(kGroupKeyKey));
  }
  // The host's first rank creates the id its daemon's ranks join by.
  const std::string id_key = kCommunicatorIdKey + std::string("/") + std::to_string(hosts.host);
  std::string id;
  if (static_cast<uint32_t>(rank) == hosts.ranks[hosts.host][0]) {
    id = CreateId(session);
    store->set(id_key, ToBytes(id));
  } else {
    id = FromBytes(store->get(id_key));
  }
  return Join(session, id, rank, size, timeout, &hosts);
}

}  // namespace torch_neuronx

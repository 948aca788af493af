#include "daemon/collectives/communicator_registry.h"

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_format.h"

namespace neuron::rtd::collectives {
namespace {

// More ranks than any Trainium cluster's hosts give one daemon.
constexpr uint32_t kMaxRanks = 1u << 12;

absl::StatusOr<std::string> RandomBytes(size_t count) {
  std::string bytes(count, '\0');
  size_t filled = 0;
  while (filled < count) {
    const ssize_t got = ::getrandom(bytes.data() + filled, count - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrFormat("getrandom failed (errno %d)", errno));
    }
    filled += static_cast<size_t>(got);
  }
  return bytes;
}

}  // namespace

CommunicatorRegistry::CommunicatorRegistry(RegistryOptions options, FabricRouter* router)
    : options_(options),
      router_(router),
      instance_id_(RandomBytes(16).value_or(absl::StrFormat("pid%d@%d", ::getpid(),
                                                             absl::ToUnixNanos(absl::Now())))),
      watchdog_([this] { Watch(); }) {}

CommunicatorRegistry::~CommunicatorRegistry() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  watchdog_.join();
  std::vector<std::shared_ptr<Communicator>> live;
  {
    absl::MutexLock lock(&mutex_);
    for (const std::weak_ptr<Communicator>& weak : live_) {
      if (std::shared_ptr<Communicator> communicator = weak.lock()) live.push_back(communicator);
    }
    pending_.clear();
  }
  for (const auto& communicator : live) {
    communicator->Abort(absl::UnavailableError("neuron-rtd is shutting down"));
  }
}

absl::StatusOr<std::string> CommunicatorRegistry::CreateId(uint64_t session_id,
                                                           std::weak_ptr<const void> owner) {
  absl::StatusOr<std::string> id = RandomBytes(kIdBytes);
  if (!id.ok()) return id.status();
  absl::MutexLock lock(&mutex_);
  std::erase_if(pending_, [](const auto& entry) {
    return entry.second.communicator == nullptr && entry.second.owner.expired();
  });
  uint32_t pending = 0;
  for (const auto& [key, entry] : pending_) pending += entry.creator == session_id ? 1 : 0;
  if (pending >= options_.max_pending_ids_per_session) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "session %d already has %d communicator ids that no rank has finished joining", session_id,
        pending));
  }
  pending_[*id] = PendingId{.creator = session_id, .owner = std::move(owner)};
  return id;
}

absl::StatusOr<std::shared_ptr<Communicator>> CommunicatorRegistry::Join(
    std::string_view id, uint32_t rank, uint32_t size, std::string member,
    absl::Duration join_timeout, absl::Duration operation_timeout,
    std::optional<HostTopology> hosts) {
  if (size == 0 || size > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a communicator has 1 to %d ranks, not %d", kMaxRanks, size));
  }
  if (rank >= size) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rank %d is not below the communicator's size %d", rank, size));
  }
  if (hosts && hosts->world_size() != size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the hosts hold %d ranks; the communicator has %d", hosts->world_size(), size));
  }
  if (hosts && router_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the communicator's ranks span %d hosts, but this daemon has no fabric to reach the "
        "others (set [fabric] provider in its configuration)",
        hosts->hosts()));
  }
  std::shared_ptr<Communicator> communicator;
  bool created = false;
  {
    absl::MutexLock lock(&mutex_);
    auto it = pending_.find(std::string(id));
    if (it == pending_.end()) {
      return absl::NotFoundError(
          "no communicator id like this one is open for joining (ids come from "
          "CreateCommunicatorId of this daemon, and a communicator's rendezvous ends once its "
          "ranks have joined)");
    }
    if (it->second.communicator == nullptr) {
      const std::string name = absl::StrFormat("c%d", next_name_++);
      it->second.communicator =
          hosts ? std::make_shared<Communicator>(name, *hosts, router_, operation_timeout,
                                                 counters_, options_.host_algorithms)
                : std::make_shared<Communicator>(name, size, operation_timeout, counters_);
      live_.push_back(it->second.communicator);
      created = true;
    } else if (it->second.communicator->size() != size) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "communicator %s has %d ranks; this rank said %d", it->second.communicator->name(),
          it->second.communicator->size(), size));
    } else {
      const HostTopology* first = it->second.communicator->topology();
      if ((first == nullptr) != !hosts ||
          (first != nullptr && (first->Fingerprint() != hosts->Fingerprint() ||
                                first->host != hosts->host ||
                                first->group_key != hosts->group_key))) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "rank %d of communicator %s names other hosts than its first rank did", rank,
            it->second.communicator->name()));
      }
    }
    communicator = it->second.communicator;
  }
  if (created && hosts) {
    if (absl::Status registered = router_->Register(hosts->group_key, communicator);
        !registered.ok()) {
      communicator->Abort(absl::Status(
          registered.code(), absl::StrFormat("communicator %s: %s", communicator->name(),
                                             registered.message())));
    }
  }
  absl::Status joined = communicator->Join(rank, std::move(member), absl::Now() + join_timeout);
  {
    absl::MutexLock lock(&mutex_);
    auto it = pending_.find(std::string(id));
    if (it != pending_.end() && it->second.communicator == communicator) pending_.erase(it);
  }
  if (!joined.ok()) return joined;
  return communicator;
}

std::vector<Communicator::Info> CommunicatorRegistry::List() const {
  std::vector<std::shared_ptr<Communicator>> live;
  {
    absl::MutexLock lock(&mutex_);
    for (const std::weak_ptr<Communicator>& weak : live_) {
      if (std::shared_ptr<Communicator> communicator = weak.lock()) live.push_back(communicator);
    }
  }
  std::vector<Communicator::Info> infos;
  infos.reserve(live.size());
  for (const auto& communicator : live) infos.push_back(communicator->info());
  return infos;
}

void CommunicatorRegistry::Watch() {
  for (;;) {
    std::vector<std::shared_ptr<Communicator>> live;
    {
      absl::MutexLock lock(&mutex_);
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return stopping_; };
      if (mutex_.AwaitWithTimeout(absl::Condition(&stopping), options_.watchdog_period)) return;
      std::erase_if(live_, [](const std::weak_ptr<Communicator>& weak) { return weak.expired(); });
      for (const std::weak_ptr<Communicator>& weak : live_) {
        if (std::shared_ptr<Communicator> communicator = weak.lock()) {
          live.push_back(std::move(communicator));
        }
      }
    }
    const absl::Time now = absl::Now();
    for (const auto& communicator : live) communicator->ExpireOverdue(now);
  }
}

}  // namespace neuron::rtd::collectives

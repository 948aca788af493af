#include "daemon/collectives/communicator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "daemon/collectives/host_reduce.h"

namespace neuron::rtd::collectives {
namespace {

uint64_t ElementBytesOf(const neuron_rtd_collective_op& op) {
  return op.element_count * neuron_rtd_dtype_bytes(op.dtype);
}

std::string Describe(const neuron_rtd_collective_op& op) {
  return absl::StrFormat("%s of %d elements (dtype %d, op %d, root %d)",
                         CollectiveKindName(op.kind), op.element_count, op.dtype, op.reduce_op,
                         op.peer);
}

}  // namespace

std::string_view CollectiveKindName(uint32_t kind) {
  switch (kind) {
    case NEURON_RTD_COLLECTIVE_ALL_REDUCE:
      return "ALL_REDUCE";
    case NEURON_RTD_COLLECTIVE_ALL_GATHER:
      return "ALL_GATHER";
    case NEURON_RTD_COLLECTIVE_REDUCE_SCATTER:
      return "REDUCE_SCATTER";
    case NEURON_RTD_COLLECTIVE_BROADCAST:
      return "BROADCAST";
    case NEURON_RTD_COLLECTIVE_REDUCE:
      return "REDUCE";
    case NEURON_RTD_COLLECTIVE_SEND:
      return "SEND";
    case NEURON_RTD_COLLECTIVE_RECV:
      return "RECV";
    case NEURON_RTD_COLLECTIVE_BARRIER:
      return "BARRIER";
    default:
      return "INVALID";
  }
}

absl::StatusOr<OperationExtents> ExtentsOf(const neuron_rtd_collective_op& op, uint32_t rank,
                                           uint32_t size) {
  const uint64_t bytes = ElementBytesOf(op);
  const bool rooted = op.kind == NEURON_RTD_COLLECTIVE_BROADCAST ||
                      op.kind == NEURON_RTD_COLLECTIVE_REDUCE ||
                      op.kind == NEURON_RTD_COLLECTIVE_SEND || op.kind == NEURON_RTD_COLLECTIVE_RECV;
  if (rooted && op.peer >= size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s names rank %d; the communicator has %d", CollectiveKindName(op.kind), op.peer, size));
  }
  switch (op.kind) {
    case NEURON_RTD_COLLECTIVE_ALL_REDUCE:
      return OperationExtents{bytes, bytes};
    case NEURON_RTD_COLLECTIVE_ALL_GATHER:
      return OperationExtents{bytes, bytes * size};
    case NEURON_RTD_COLLECTIVE_REDUCE_SCATTER:
      return OperationExtents{bytes * size, bytes};
    case NEURON_RTD_COLLECTIVE_BROADCAST:
      return OperationExtents{rank == op.peer ? bytes : 0, bytes};
    case NEURON_RTD_COLLECTIVE_REDUCE:
      return OperationExtents{bytes, rank == op.peer ? bytes : 0};
    case NEURON_RTD_COLLECTIVE_SEND:
      return OperationExtents{bytes, 0};
    case NEURON_RTD_COLLECTIVE_RECV:
      return OperationExtents{0, bytes};
    default:
      return OperationExtents{};
  }
}

Communicator::Communicator(std::string name, uint32_t size, absl::Duration timeout,
                           std::shared_ptr<CollectiveCounters> counters)
    : name_(std::move(name)), size_(size), timeout_(timeout), counters_(std::move(counters)) {
  members_.resize(size);
}

Communicator::Communicator(std::string name, HostTopology topology, FabricRouter* router,
                           absl::Duration timeout, std::shared_ptr<CollectiveCounters> counters,
                           HostAlgorithmOptions algorithms)
    : name_(std::move(name)),
      size_(topology.world_size()),
      timeout_(timeout),
      counters_(std::move(counters)),
      topology_(std::move(topology)),
      router_(router),
      algorithms_(algorithms) {
  members_.resize(size_);
  exchange_thread_ = std::thread([this] { RunExchanges(); });
}

Communicator::~Communicator() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  if (router_ != nullptr) router_->Unregister(topology_->group_key);
  mailbox_.Abort(absl::CancelledError(absl::StrFormat("communicator %s is gone", name_)));
  if (exchange_thread_.joinable()) {
    // The exchange thread may drop the last reference itself (settling a
    // collective ends a session): it then finishes on its own.
    if (exchange_thread_.get_id() == std::this_thread::get_id()) {
      exchange_thread_.detach();
    } else {
      exchange_thread_.join();
    }
  }
}

uint32_t Communicator::local_size() const {
  return topology_ ? static_cast<uint32_t>(topology_->local_ranks().size()) : size_;
}

absl::Status Communicator::Join(uint32_t rank, std::string member, absl::Time deadline) {
  std::vector<Arrival> failed;
  absl::Status status;
  {
    absl::MutexLock lock(&mutex_);
    if (!aborted_.ok()) return aborted_;
    if (rank >= size_) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "rank %d does not exist in communicator %s of %d ranks", rank, name_, size_));
    }
    if (topology_ && !topology_->IsLocal(rank)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "rank %d of communicator %s is on host %d; this daemon serves host %d", rank, name_,
          topology_->host_of_rank[rank], topology_->host));
    }
    if (!members_[rank].empty()) {
      return absl::AlreadyExistsError(absl::StrFormat("rank %d of communicator %s is taken by %s",
                                                      rank, name_, members_[rank]));
    }
    members_[rank] = std::move(member);
    ++joined_;
    auto settled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
      return joined_ == local_size() || !aborted_.ok();
    };
    mutex_.AwaitWithDeadline(absl::Condition(&settled), deadline);
    if (!aborted_.ok()) return aborted_;
    if (joined_ == local_size()) {
      if (!topology_) return absl::OkStatus();
      if (connecting_) {
        auto connected = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
          return connected_.has_value() || !aborted_.ok();
        };
        mutex_.Await(absl::Condition(&connected));
        return aborted_.ok() ? *connected_ : aborted_;
      }
      connecting_ = true;
    } else {
      std::vector<uint32_t> missing;
      for (uint32_t i = 0; i < size_; ++i) {
        if (members_[i].empty() && (!topology_ || topology_->IsLocal(i))) missing.push_back(i);
      }
      status = absl::DeadlineExceededError(
          absl::StrFormat("communicator %s: rank(s) %s of %d did not join in time", name_,
                          absl::StrJoin(missing, ","), size_));
      AbortLocked(status, failed);
    }
  }
  if (!status.ok()) {
    AfterAbort(status, failed, /*tell_hosts=*/true);
    return status;
  }
  // This thread completed the host's ranks: it meets the other hosts.
  absl::Status connected = ConnectHosts(deadline);
  {
    absl::MutexLock lock(&mutex_);
    connected_ = connected;
    if (connected.ok()) return aborted_;
    if (aborted_.ok()) AbortLocked(connected, failed);
  }
  AfterAbort(connected, failed, /*tell_hosts=*/true);
  return connected;
}

absl::StatusOr<std::shared_ptr<GroupCompletion>> Communicator::Post(
    uint32_t rank, std::vector<RankOp> ops, std::function<void()> on_done) {
  auto completion =
      std::make_shared<GroupCompletion>(static_cast<uint32_t>(ops.size()), std::move(on_done));
  std::vector<Work> ready;
  std::vector<std::pair<Work, absl::Status>> refused;
  // Sends to and receives from ranks of other hosts.
  std::vector<Arrival> remote;
  // A rank that numbers two operations alike breaks the matching for every
  // rank: the communicator is aborted.
  absl::Status violation;
  std::vector<Arrival> aborted;
  {
    absl::MutexLock lock(&mutex_);
    if (!aborted_.ok()) return aborted_;
    if (rank >= size_ || members_[rank].empty()) {
      return absl::FailedPreconditionError(
          absl::StrFormat("rank %d has not joined communicator %s", rank, name_));
    }
    if (pending_ + ops.size() > kMaxPendingArrivals) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "communicator %s already has %d operations waiting for their peers", name_, pending_));
    }
    const absl::Time now = absl::Now();
    for (RankOp& op : ops) {
      Arrival arrival{.rank = rank, .op = std::move(op), .completion = completion};
      const neuron_rtd_collective_op& posted = arrival.op.op;
      const uint64_t sequence = posted.sequence;
      if (posted.kind == NEURON_RTD_COLLECTIVE_SEND || posted.kind == NEURON_RTD_COLLECTIVE_RECV) {
        const bool sends = posted.kind == NEURON_RTD_COLLECTIVE_SEND;
        const uint32_t sender = sends ? rank : posted.peer;
        const uint32_t receiver = sends ? posted.peer : rank;
        if (topology_ && !topology_->IsLocal(posted.peer)) {
          if (!sends) {
            if (!remote_receives_.try_emplace({sender, receiver, sequence}, arrival).second) {
              aborted.push_back(Arrival{.rank = rank, .completion = completion});
              if (violation.ok()) {
                violation = absl::InvalidArgumentError(absl::StrFormat(
                    "communicator %s: rank %d numbered two receives from rank %d #%d", name_,
                    rank, posted.peer, sequence));
              }
              continue;
            }
          }
          remote.push_back(std::move(arrival));
          continue;
        }
        Channel& channel = channels_[uint64_t{sender} * size_ + receiver];
        auto& mine = sends ? channel.sends : channel.recvs;
        auto& others = sends ? channel.recvs : channel.sends;
        auto match = others.find(sequence);
        if (match == others.end()) {
          if (mine.emplace(sequence, std::make_pair(std::move(arrival), now)).second) {
            ++pending_;
            continue;
          }
          aborted.push_back(Arrival{.rank = rank, .completion = completion});
          if (violation.ok()) {
            violation = absl::InvalidArgumentError(absl::StrFormat(
                "communicator %s: rank %d numbered two %s %s rank %d #%d", name_, rank,
                sends ? "sends" : "receives", sends ? "to" : "from", posted.peer, sequence));
          }
          continue;
        }
        Arrival other = std::move(match->second.first);
        others.erase(match);
        --pending_;
        Work pair;
        pair.push_back(sends ? std::move(arrival) : std::move(other));
        pair.push_back(sends ? std::move(other) : std::move(arrival));
        const neuron_rtd_collective_op& send = pair[0].op.op;
        const neuron_rtd_collective_op& recv = pair[1].op.op;
        if (send.dtype != recv.dtype || send.element_count != recv.element_count) {
          refused.emplace_back(
              std::move(pair),
              absl::InvalidArgumentError(absl::StrFormat(
                  "communicator %s: rank %d sends %d elements of dtype %d to rank %d, which "
                  "receives %d elements of dtype %d",
                  name_, sender, send.element_count, send.dtype, receiver, recv.element_count,
                  recv.dtype)));
        } else {
          ready.push_back(std::move(pair));
        }
        continue;
      }
      Slot& slot = slots_[sequence];
      if (slot.arrivals.empty()) {
        slot.index = sequence;
        slot.opened = now;
      }
      if (!slot.arrivals.emplace(rank, std::move(arrival)).second) {
        aborted.push_back(Arrival{.rank = rank, .completion = completion});
        if (violation.ok()) {
          violation = absl::InvalidArgumentError(absl::StrFormat(
              "communicator %s: rank %d issued collective #%d twice", name_, rank, sequence));
        }
        continue;
      }
      ++pending_;
      if (slot.arrivals.size() < local_size()) continue;
      absl::Status agreement = CheckAgreement(slot);
      Work work;
      for (auto& [each_rank, each] : slot.arrivals) work.push_back(std::move(each));
      pending_ -= local_size();
      slots_.erase(sequence);
      if (agreement.ok()) {
        ready.push_back(std::move(work));
      } else {
        refused.emplace_back(std::move(work), std::move(agreement));
      }
    }
    if (!violation.ok()) {
      // What this group did post fails with the rest.
      AbortLocked(violation, aborted);
      for (Work& work : ready) {
        for (Arrival& arrival : work) aborted.push_back(std::move(arrival));
      }
      ready.clear();
      for (Arrival& arrival : remote) aborted.push_back(std::move(arrival));
      remote.clear();
    }
  }
  if (!violation.ok()) AfterAbort(violation, aborted, /*tell_hosts=*/true);
  for (auto& [work, status] : refused) {
    if (counters_ != nullptr) counters_->Count(work[0].op.op.kind, /*ok=*/false, 0);
    for (Arrival& arrival : work) arrival.completion->Settle(status);
  }
  for (Work& work : ready) Execute(work);
  for (Arrival& arrival : remote) PostRemote(std::move(arrival));
  return completion;
}

absl::Status Communicator::CheckAgreement(const Slot& slot) const {
  const uint32_t first_rank = slot.arrivals.begin()->first;
  const neuron_rtd_collective_op& first = slot.arrivals.begin()->second.op.op;
  const bool rooted = first.kind == NEURON_RTD_COLLECTIVE_BROADCAST ||
                      first.kind == NEURON_RTD_COLLECTIVE_REDUCE;
  for (const auto& [rank, arrival] : slot.arrivals) {
    const neuron_rtd_collective_op& op = arrival.op.op;
    if (op.kind != first.kind || op.dtype != first.dtype ||
        op.element_count != first.element_count || op.reduce_op != first.reduce_op ||
        op.scale != first.scale || (rooted && op.peer != first.peer)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "communicator %s, collective #%d: rank %d issued %s, rank %d issued %s (every rank must "
          "issue the same collectives in the same order)",
          name_, slot.index, first_rank, Describe(first), rank, Describe(op)));
    }
  }
  return absl::OkStatus();
}

void Communicator::Execute(Work& work) {
  if (topology_ && work[0].op.op.kind != NEURON_RTD_COLLECTIVE_SEND) {
    absl::Status aborted;
    {
      absl::MutexLock lock(&mutex_);
      aborted = aborted_;
      if (aborted.ok()) {
        const uint64_t index = work[0].op.op.sequence;
        exchanges_.try_emplace(index, std::move(work), absl::Now());
        return;
      }
    }
    for (Arrival& arrival : work) arrival.completion->Settle(aborted);
    return;
  }
  Finish(work, Move(work));
}

void Communicator::Finish(Work& work, absl::Status status) {
  if (!status.ok()) {
    status = absl::Status(status.code(),
                          absl::StrFormat("communicator %s, %s: %s", name_,
                                          CollectiveKindName(work[0].op.op.kind),
                                          status.message()));
  }
  if (work[0].op.op.kind != NEURON_RTD_COLLECTIVE_SEND) {
    absl::MutexLock lock(&mutex_);
    ++collectives_completed_;
  }
  if (counters_ != nullptr) {
    uint64_t received = 0;
    for (const Arrival& arrival : work) {
      // Checked when the operation was posted.
      if (absl::StatusOr<OperationExtents> extents =
              ExtentsOf(arrival.op.op, arrival.rank, size_);
          extents.ok() && status.ok()) {
        received += extents->recv_bytes;
      }
    }
    counters_->Count(work[0].op.op.kind, status.ok(), received);
  }
  for (Arrival& arrival : work) arrival.completion->Settle(status);
}

void Communicator::Leave(uint32_t rank, std::string_view reason) {
  std::vector<Arrival> failed;
  absl::Status status;
  {
    absl::MutexLock lock(&mutex_);
    if (!aborted_.ok()) return;
    const std::string who = rank < size_ && !members_[rank].empty()
                                ? absl::StrFormat("rank %d (%s)", rank, members_[rank])
                                : absl::StrFormat("rank %d", rank);
    status = absl::AbortedError(
        absl::StrFormat("communicator %s: %s left: %s", name_, who, reason));
    AbortLocked(status, failed);
  }
  AfterAbort(status, failed, /*tell_hosts=*/true);
}

void Communicator::Abort(absl::Status status) {
  std::vector<Arrival> failed;
  {
    absl::MutexLock lock(&mutex_);
    if (!aborted_.ok()) return;
    AbortLocked(status, failed);
  }
  AfterAbort(status, failed, /*tell_hosts=*/true);
}

void Communicator::AfterAbort(const absl::Status& status, std::vector<Arrival>& failed,
                              bool tell_hosts) {
  for (Arrival& arrival : failed) arrival.completion->Settle(status);
  if (!topology_) return;
  mailbox_.Abort(status);
  if (tell_hosts) TellHostsOfAbort(status);
}

void Communicator::ExpireOverdue(absl::Time now) {
  std::vector<Arrival> failed;
  absl::Status status;
  {
    absl::MutexLock lock(&mutex_);
    if (!aborted_.ok()) return;
    const absl::Time limit = now - timeout_;
    std::string overdue;
    for (const auto& [index, slot] : slots_) {
      if (slot.opened > limit) continue;
      std::vector<uint32_t> missing;
      for (uint32_t rank = 0; rank < size_; ++rank) {
        if (!slot.arrivals.contains(rank) && (!topology_ || topology_->IsLocal(rank))) {
          missing.push_back(rank);
        }
      }
      const std::string_view kind = CollectiveKindName(slot.arrivals.begin()->second.op.op.kind);
      overdue = absl::StrFormat("collective #%d (%s) waited more than %s for rank(s) %s", index,
                                kind, absl::FormatDuration(timeout_), absl::StrJoin(missing, ","));
      break;
    }
    for (auto it = channels_.begin(); overdue.empty() && it != channels_.end(); ++it) {
      const uint64_t sender = it->first / size_;
      const uint64_t receiver = it->first % size_;
      const Channel& channel = it->second;
      auto waited_too_long = [&](const auto& waiting) {
        return std::any_of(waiting.begin(), waiting.end(),
                           [&](const auto& entry) { return entry.second.second <= limit; });
      };
      if (waited_too_long(channel.sends)) {
        overdue = absl::StrFormat("a send from rank %d waited more than %s for rank %d to receive",
                                  sender, absl::FormatDuration(timeout_), receiver);
      } else if (waited_too_long(channel.recvs)) {
        overdue = absl::StrFormat("a receive on rank %d waited more than %s for rank %d to send",
                                  receiver, absl::FormatDuration(timeout_), sender);
      }
    }
    if (overdue.empty()) return;
    status = absl::DeadlineExceededError(
        absl::StrFormat("communicator %s timed out: %s", name_, overdue));
    AbortLocked(status, failed);
  }
  AfterAbort(status, failed, /*tell_hosts=*/true);
}

void Communicator::AbortLocked(absl::Status status, std::vector<Arrival>& failed) {
  aborted_ = std::move(status);
  for (auto& [index, slot] : slots_) {
    for (auto& [rank, arrival] : slot.arrivals) failed.push_back(std::move(arrival));
  }
  slots_.clear();
  for (auto& [key, channel] : channels_) {
    for (auto& [sequence, waiting] : channel.sends) failed.push_back(std::move(waiting.first));
    for (auto& [sequence, waiting] : channel.recvs) failed.push_back(std::move(waiting.first));
  }
  channels_.clear();
  for (auto& [index, exchange] : exchanges_) {
    for (Arrival& arrival : exchange.first) failed.push_back(std::move(arrival));
  }
  exchanges_.clear();
  for (auto& [key, arrival] : remote_receives_) failed.push_back(std::move(arrival));
  remote_receives_.clear();
  pending_ = 0;
}

Communicator::Info Communicator::info() const {
  absl::MutexLock lock(&mutex_);
  Info info{.name = name_, .size = size_, .members = members_,
            .collectives_completed = collectives_completed_};
  if (topology_) {
    info.hosts = topology_->hosts();
    info.host = topology_->host;
    for (uint32_t rank = 0; rank < size_; ++rank) {
      if (!topology_->IsLocal(rank)) {
        info.members[rank] = absl::StrFormat("on host %d", topology_->host_of_rank[rank]);
      }
    }
  }
  info.operations_pending = pending_ + remote_receives_.size();
  for (const auto& [index, exchange] : exchanges_) info.operations_pending += exchange.first.size();
  if (!aborted_.ok()) info.aborted = std::string(aborted_.message());
  return info;
}

}  // namespace neuron::rtd::collectives

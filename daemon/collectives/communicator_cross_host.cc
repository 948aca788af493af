// The parts of a communicator whose ranks span hosts: meeting the other
// hosts' daemons, their messages, sends and receives between hosts, and the
// exchange thread that runs collectives between hosts in issue order (the
// collectives' steps are in communicator_exchange.cc).
#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "daemon/collectives/communicator.h"
#include "daemon/collectives/internal/fabric_messages.h"

namespace neuron::rtd::collectives {
namespace {

using internal::BytesOf;
using internal::Describe;
using internal::kHeaderBytes;
using internal::Within;

// How long telling the other hosts of an abort may take.
constexpr absl::Duration kAbortNoticeTime = absl::Seconds(2);

}  // namespace

absl::StatusOr<fabric::PeerId> Communicator::PeerOf(uint32_t host) const {
  absl::MutexLock lock(&mutex_);
  if (host >= peers_.size() || host == topology_->host) {
    return absl::FailedPreconditionError(
        absl::StrFormat("communicator %s is not connected to host %d", name_, host));
  }
  return peers_[host];
}

neuron_rtd_fabric_header Communicator::HeaderFor(uint32_t type) const {
  neuron_rtd_fabric_header header{};
  header.magic = NEURON_RTD_FABRIC_MAGIC;
  header.version = NEURON_RTD_FABRIC_VERSION;
  header.type = static_cast<uint16_t>(type);
  std::memcpy(header.group_key, topology_->group_key.data(), sizeof(header.group_key));
  header.source_host = topology_->host;
  return header;
}

absl::Status Communicator::ConnectHosts(absl::Time deadline) {
  const HostTopology& topology = *topology_;
  if (router_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "communicator %s spans %d hosts, but this daemon has no fabric (set [fabric] provider)",
        name_, topology.hosts()));
  }
  if (topology.addresses[topology.host] != router_->address()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "communicator %s: the ranks name another fabric address for host %d than this daemon's",
        name_, topology.host));
  }
  std::vector<fabric::PeerId> peers(topology.hosts());
  for (uint32_t host = 0; host < topology.hosts(); ++host) {
    if (host == topology.host) continue;
    absl::StatusOr<fabric::PeerId> peer = router_->transport().AddPeer(topology.addresses[host]);
    if (!peer.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat("communicator %s, host %d: %s", name_,
                                                        host, peer.status().message()));
    }
    peers[host] = *peer;
  }
  {
    absl::MutexLock lock(&mutex_);
    peers_ = peers;
  }
  neuron_rtd_fabric_header hello = HeaderFor(NEURON_RTD_FABRIC_HELLO);
  hello.index = topology.Fingerprint();
  hello.total = algorithms_.recursive_doubling_max_bytes;
  for (uint32_t host = 0; host < topology.hosts(); ++host) {
    if (host == topology.host) continue;
    if (absl::Status sent = router_->transport().Send(peers[host], BytesOf(hello), {}, deadline);
        !sent.ok()) {
      return absl::Status(sent.code(), absl::StrFormat("communicator %s: reaching host %d: %s",
                                                       name_, host, sent.message()));
    }
  }
  std::vector<uint32_t> missing;
  for (uint32_t host = 0; host < topology.hosts(); ++host) {
    if (host == topology.host) continue;
    absl::StatusOr<Mail> mail =
        mailbox_.Take({.type = NEURON_RTD_FABRIC_HELLO, .source_host = host}, deadline);
    if (!mail.ok()) {
      if (mail.status().code() != absl::StatusCode::kDeadlineExceeded) return mail.status();
      missing.push_back(host);
      continue;
    }
    if (mail->header.index != hello.index) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "communicator %s: host %d's ranks were given other hosts or ranks than this host's",
          name_, host));
    }
    if (mail->header.total != hello.total) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "communicator %s: host %d's daemon runs all-reduces of up to %d bytes by recursive "
          "doubling, this daemon up to %d (set the same [fabric] recursive_doubling_max_bytes "
          "on every host)",
          name_, host, mail->header.total, hello.total));
    }
  }
  if (!missing.empty()) {
    std::vector<uint32_t> ranks;
    for (uint32_t host : missing) {
      ranks.insert(ranks.end(), topology.ranks_of_host[host].begin(),
                   topology.ranks_of_host[host].end());
    }
    return absl::DeadlineExceededError(absl::StrFormat(
        "communicator %s: host(s) %s (rank(s) %s) did not join in time", name_,
        absl::StrJoin(missing, ","), absl::StrJoin(ranks, ",")));
  }
  return absl::OkStatus();
}

void Communicator::Receive(const neuron_rtd_fabric_header& header,
                           std::span<const uint8_t> payload) {
  if (header.source_host >= topology_->hosts() || header.source_host == topology_->host) return;
  if (header.type == NEURON_RTD_FABRIC_ABORT) {
    const size_t length = std::min<size_t>(payload.size(), NEURON_RTD_FABRIC_MAX_REASON_BYTES);
    const absl::Status status = absl::AbortedError(absl::StrFormat(
        "communicator %s: host %d failed: %s", name_, header.source_host,
        std::string_view(reinterpret_cast<const char*>(payload.data()), length)));
    std::vector<Arrival> failed;
    {
      absl::MutexLock lock(&mutex_);
      if (!aborted_.ok()) return;
      AbortLocked(status, failed);
    }
    AfterAbort(status, failed, /*tell_hosts=*/false);
    return;
  }
  if (header.type != NEURON_RTD_FABRIC_HELLO && header.type != NEURON_RTD_FABRIC_DATA) return;
  if (absl::Status delivered = mailbox_.Deliver(header, payload);
      delivered.code() == absl::StatusCode::kResourceExhausted) {
    Abort(absl::ResourceExhaustedError(absl::StrFormat(
        "communicator %s: host %d: %s", name_, header.source_host, delivered.message())));
  }
}

void Communicator::PeerFailed(fabric::PeerId peer, const absl::Status& why) {
  uint32_t failed_host = 0;
  bool ours = false;
  {
    absl::MutexLock lock(&mutex_);
    for (uint32_t host = 0; host < peers_.size(); ++host) {
      if (host != topology_->host && peers_[host] == peer) {
        failed_host = host;
        ours = true;
      }
    }
  }
  if (!ours) return;
  Abort(absl::UnavailableError(absl::StrFormat("communicator %s: host %d cannot be reached: %s",
                                               name_, failed_host, why.message())));
}

void Communicator::TellHostsOfAbort(const absl::Status& status) {
  std::vector<fabric::PeerId> peers;
  {
    absl::MutexLock lock(&mutex_);
    peers = peers_;
  }
  if (peers.empty() || router_ == nullptr) return;
  neuron_rtd_fabric_header header = HeaderFor(NEURON_RTD_FABRIC_ABORT);
  const absl::string_view reason = status.message().substr(0, NEURON_RTD_FABRIC_MAX_REASON_BYTES);
  header.bytes = reason.size();
  const absl::Time deadline = absl::Now() + kAbortNoticeTime;
  for (uint32_t host = 0; host < peers.size(); ++host) {
    if (host == topology_->host) continue;
    // Best effort: a host that cannot be told finds out by its timeout.
    (void)router_->transport().Send(
        peers[host], BytesOf(header),
        {reinterpret_cast<const uint8_t*>(reason.data()), reason.size()}, deadline);
  }
}

void Communicator::PostRemote(Arrival arrival) {
  if (arrival.op.op.kind == NEURON_RTD_COLLECTIVE_SEND) {
    SendToHost(arrival);
  } else {
    ReceiveFromHost(std::move(arrival));
  }
}

void Communicator::SendToHost(Arrival& arrival) {
  const neuron_rtd_collective_op& op = arrival.op.op;
  const uint64_t bytes = op.element_count * neuron_rtd_dtype_bytes(op.dtype);
  const uint32_t host = topology_->host_of_rank[op.peer];
  absl::Status status;
  absl::StatusOr<fabric::PeerId> peer = PeerOf(host);
  if (!peer.ok()) status = peer.status();
  neuron_rtd_fabric_header header = HeaderFor(NEURON_RTD_FABRIC_DATA);
  header.phase = NEURON_RTD_FABRIC_PHASE_POINT_TO_POINT;
  header.index = op.sequence;
  header.source_rank = arrival.rank;
  header.dest_rank = op.peer;
  header.total = bytes;
  Describe(header, op);
  const uint64_t chunk = router_->transport().max_message_bytes() - kHeaderBytes;
  std::vector<uint8_t> buffer(std::min(bytes, chunk));
  const absl::Time deadline = absl::Now() + timeout_;
  uint64_t offset = 0;
  do {
    if (!status.ok()) break;
    const uint64_t length = std::min(chunk, bytes - offset);
    if (length > 0) {
      status = arrival.op.send.device->CopyDeviceToHost(buffer.data(),
                                                        arrival.op.send.address + offset, length);
      if (!status.ok()) break;
    }
    header.offset = offset;
    header.bytes = length;
    status = router_->transport().Send(*peer, BytesOf(header), {buffer.data(), length}, deadline);
    offset += length;
  } while (offset < bytes);
  if (!status.ok()) {
    status = absl::Status(status.code(),
                          absl::StrFormat("communicator %s: rank %d's send to rank %d on host %d: %s",
                                          name_, arrival.rank, op.peer, host, status.message()));
  }
  if (counters_ != nullptr) counters_->Count(NEURON_RTD_COLLECTIVE_SEND, status.ok(), 0);
  arrival.completion->Settle(status);
  // The receiver would wait for bytes that never come.
  if (!status.ok()) Abort(status);
}

void Communicator::ReceiveFromHost(Arrival arrival) {
  const neuron_rtd_collective_op op = arrival.op.op;
  const uint32_t rank = arrival.rank;
  const uint32_t host = topology_->host_of_rank[op.peer];
  struct Progress {
    RankBuffer recv;
    uint64_t total = 0;
    uint64_t received = 0;
    absl::Status error;
  };
  auto progress = std::make_shared<Progress>();
  progress->recv = arrival.op.recv;
  progress->total = op.element_count * neuron_rtd_dtype_bytes(op.dtype);
  HostMailbox::Claim claim;
  claim.take = [progress, op, host](const neuron_rtd_fabric_header& header,
                                    std::span<const uint8_t> payload) {
    if (header.dtype != op.dtype || header.element_count != op.element_count) {
      progress->error = absl::InvalidArgumentError(absl::StrFormat(
          "rank %d on host %d sends %d elements of dtype %d; the receive takes %d of dtype %d",
          op.peer, host, header.element_count, header.dtype, op.element_count, op.dtype));
      return true;
    }
    if (!Within(header.offset, payload.size(), 0, progress->total) ||
        payload.size() > progress->total - progress->received) {
      progress->error = absl::InvalidArgumentError(absl::StrFormat(
          "host %d sent bytes outside the receive of %d bytes", host, progress->total));
      return true;
    }
    if (!payload.empty()) {
      progress->error = progress->recv.device->CopyHostToDevice(
          progress->recv.address + header.offset, payload.data(), payload.size());
      if (!progress->error.ok()) return true;
    }
    progress->received += payload.size();
    return progress->received == progress->total;
  };
  claim.done = [this, progress, key = std::make_tuple(op.peer, rank, op.sequence),
                rank](const absl::Status& status) {
    absl::Status result = status.ok() ? progress->error : status;
    Arrival done;
    {
      absl::MutexLock lock(&mutex_);
      auto it = remote_receives_.find(key);
      if (it == remote_receives_.end()) return;  // failed by an abort already
      done = std::move(it->second);
      remote_receives_.erase(it);
    }
    if (!result.ok()) {
      result = absl::Status(result.code(),
                            absl::StrFormat("communicator %s: rank %d's receive from rank %d: %s",
                                            name_, rank, std::get<0>(key), result.message()));
    }
    if (counters_ != nullptr) {
      counters_->Count(NEURON_RTD_COLLECTIVE_RECV, result.ok(), result.ok() ? progress->total : 0);
    }
    done.completion->Settle(result);
  };
  mailbox_.AddClaim({.type = NEURON_RTD_FABRIC_DATA,
                     .phase = NEURON_RTD_FABRIC_PHASE_POINT_TO_POINT,
                     .index = op.sequence,
                     .source_host = host,
                     .source_rank = op.peer,
                     .dest_rank = rank},
                    std::move(claim));
}

void Communicator::RunExchanges() {
  for (;;) {
    Work work;
    absl::Status overdue;
    std::vector<Arrival> failed;
    {
      absl::MutexLock lock(&mutex_);
      auto runnable = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
        return stopping_ || exchanges_.contains(next_exchange_);
      };
      if (!mutex_.AwaitWithTimeout(absl::Condition(&runnable), absl::Seconds(1))) {
        // A later collective waits for one this host's ranks never issued.
        if (aborted_.ok() && !exchanges_.empty() &&
            exchanges_.begin()->second.second + timeout_ < absl::Now()) {
          overdue = absl::DeadlineExceededError(absl::StrFormat(
              "communicator %s timed out: collective #%d waited more than %s for this host's "
              "ranks to issue #%d",
              name_, exchanges_.begin()->first, absl::FormatDuration(timeout_), next_exchange_));
          AbortLocked(overdue, failed);
        }
      } else {
        if (stopping_) return;
        auto it = exchanges_.find(next_exchange_);
        work = std::move(it->second.first);
        exchanges_.erase(it);
        ++next_exchange_;
      }
    }
    if (!overdue.ok()) AfterAbort(overdue, failed, /*tell_hosts=*/true);
    if (work.empty()) continue;
    const absl::Status status = Exchange(work);
    // Aborted before the ranks hear of the failure, so that what they issue
    // next fails at once rather than waiting for hosts that have given up.
    if (!status.ok()) {
      Abort(absl::Status(status.code(), absl::StrFormat("communicator %s, %s: %s", name_,
                                                        CollectiveKindName(work[0].op.op.kind),
                                                        status.message())));
    }
    Finish(work, status);
  }
}
}  // namespace neuron::rtd::collectives

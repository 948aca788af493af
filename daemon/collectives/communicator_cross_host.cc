// The parts of a communicator whose ranks span hosts: meeting the other
// hosts' daemons, sends and receives between hosts, and the collectives'
// exchanges. Every collective reduces or gathers its host's ranks first (on
// the host), then moves between hosts directly: each host sends each other
// host its share, so every host sends and receives (H-1)/H of the data per
// step, as a ring would, in one step instead of H-1. Results are then
// copied to the host's ranks.
#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "daemon/collectives/communicator.h"
#include "daemon/collectives/host_reduce.h"

namespace neuron::rtd::collectives {
namespace {

constexpr size_t kHeaderBytes = sizeof(neuron_rtd_fabric_header);
// How long telling the other hosts of an abort may take.
constexpr absl::Duration kAbortNoticeTime = absl::Seconds(2);

std::span<const uint8_t> BytesOf(const neuron_rtd_fabric_header& header) {
  return {reinterpret_cast<const uint8_t*>(&header), sizeof(header)};
}

void Describe(neuron_rtd_fabric_header& header, const neuron_rtd_collective_op& op) {
  header.kind = op.kind;
  header.reduce_op = op.reduce_op;
  header.dtype = op.dtype;
  header.root = op.peer;
  header.element_count = op.element_count;
  header.scale = op.scale;
}

bool Within(uint64_t offset, uint64_t bytes, uint64_t begin, uint64_t end) {
  return offset >= begin && offset <= end && bytes <= end - offset;
}

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
    const uint32_t kind = work[0].op.op.kind;
    Finish(work, status);
    if (!status.ok()) {
      Abort(absl::Status(status.code(), absl::StrFormat("communicator %s, %s: %s", name_,
                                                        CollectiveKindName(kind),
                                                        status.message())));
    }
  }
}

absl::Status Communicator::CheckRemote(const neuron_rtd_fabric_header& header,
                                       const neuron_rtd_collective_op& op) const {
  const bool rooted =
      op.kind == NEURON_RTD_COLLECTIVE_BROADCAST || op.kind == NEURON_RTD_COLLECTIVE_REDUCE;
  if (header.kind == op.kind && header.dtype == op.dtype &&
      header.element_count == op.element_count && header.reduce_op == op.reduce_op &&
      header.scale == op.scale && (!rooted || header.root == op.peer)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "collective #%d: host %d issued %s of %d elements (dtype %d, op %d, root %d), this host "
      "issued %s of %d elements (dtype %d, op %d, root %d) (every rank must issue the same "
      "collectives in the same order)",
      op.sequence, header.source_host, CollectiveKindName(header.kind), header.element_count,
      header.dtype, header.reduce_op, header.root, CollectiveKindName(op.kind), op.element_count,
      op.dtype, op.reduce_op, op.peer));
}

absl::Status Communicator::SendBytes(uint32_t host, uint32_t phase,
                                     const neuron_rtd_collective_op& op,
                                     const std::vector<OutgoingRange>& ranges, absl::Time deadline,
                                     const std::shared_ptr<fabric::SendTracker>& tracker) {
  absl::StatusOr<fabric::PeerId> peer = PeerOf(host);
  if (!peer.ok()) return peer.status();
  neuron_rtd_fabric_header header = HeaderFor(NEURON_RTD_FABRIC_DATA);
  header.phase = phase;
  header.index = op.sequence;
  Describe(header, op);
  const uint64_t chunk = router_->transport().max_message_bytes() - kHeaderBytes;
  bool sent_any = false;
  for (const OutgoingRange& range : ranges) {
    for (uint64_t done = 0; done < range.bytes; done += chunk) {
      header.offset = range.offset + done;
      header.bytes = std::min(chunk, range.bytes - done);
      const std::span<const uint8_t> piece(range.data + done, header.bytes);
      if (absl::Status sent =
              tracker != nullptr
                  ? router_->transport().SendInPlace(*peer, BytesOf(header), piece, deadline,
                                                     tracker)
                  : router_->transport().Send(*peer, BytesOf(header), piece, deadline);
          !sent.ok()) {
        return absl::Status(sent.code(), absl::StrFormat("sending to host %d: %s", host,
                                                         sent.message()));
      }
      sent_any = true;
    }
  }
  if (sent_any) return absl::OkStatus();
  // Nothing to move: one empty message still says this host got here.
  header.offset = 0;
  header.bytes = 0;
  return router_->transport().Send(*peer, BytesOf(header), {}, deadline);
}

// A claim on what `host` sends for one step (phase) of collective
// `op.sequence`: each piece is checked and handed to `use` on the progress
// thread as it arrives, straight from the receive buffer. Register it
// before sending this step's own bytes; the destructor withdraws it.
class Communicator::Incoming {
 public:
  Incoming(Communicator& communicator, uint32_t host, uint32_t phase,
           const neuron_rtd_collective_op& op, uint64_t expected, IncomingUse use)
      : communicator_(communicator),
        host_(host),
        op_(op),
        key_{.type = NEURON_RTD_FABRIC_DATA, .phase = phase, .index = op.sequence,
             .source_host = host},
        state_(std::make_shared<State>()) {
    HostMailbox::Claim claim;
    claim.take = [state = state_, this, expected, use = std::move(use)](
                     const neuron_rtd_fabric_header& header,
                     std::span<const uint8_t> payload) {
      if (absl::Status agreed = communicator_.CheckRemote(header, op_); !agreed.ok()) {
        state->error = agreed;
        return true;
      }
      if (payload.size() > expected - state->received) {
        state->error = absl::InvalidArgumentError(absl::StrFormat(
            "host %d sent more than the %d bytes collective #%d moves to this host", host_,
            expected, op_.sequence));
        return true;
      }
      if (!payload.empty()) {
        if (absl::Status used = use(header.offset, payload); !used.ok()) {
          state->error = used;
          return true;
        }
      }
      state->received += payload.size();
      return state->received >= expected;
    };
    claim.done = [state = state_](const absl::Status& status) {
      state->status = status;
      state->finished.Notify();
    };
    communicator_.mailbox_.AddClaim(key_, std::move(claim));
  }
  Incoming(const Incoming&) = delete;
  Incoming& operator=(const Incoming&) = delete;
  ~Incoming() { communicator_.mailbox_.RemoveClaim(key_); }

  absl::Status Wait(absl::Time deadline) {
    if (!state_->finished.WaitForNotificationWithDeadline(deadline)) {
      if (communicator_.mailbox_.RemoveClaim(key_)) {
        return absl::DeadlineExceededError(absl::StrFormat(
            "collective #%d waited more than %s for host %d (rank(s) %s)", op_.sequence,
            absl::FormatDuration(communicator_.timeout_), host_,
            absl::StrJoin(communicator_.topology_->ranks_of_host[host_], ",")));
      }
      state_->finished.WaitForNotification();
    }
    return state_->status.ok() ? state_->error : state_->status;
  }

 private:
  // Written under the mailbox's lock (take) or before `finished`.
  struct State {
    uint64_t received = 0;
    absl::Status error;
    absl::Status status;
    absl::Notification finished;
  };
  Communicator& communicator_;
  const uint32_t host_;
  const neuron_rtd_collective_op op_;
  const MailKey key_;
  const std::shared_ptr<State> state_;
};

absl::Status Communicator::Exchange(const Work& work) {
  const HostTopology& topology = *topology_;
  const neuron_rtd_collective_op& op = work[0].op.op;
  const uint32_t me = topology.host;
  const uint64_t element_bytes = neuron_rtd_dtype_bytes(op.dtype);
  const uint64_t bytes = op.element_count * element_bytes;
  const hal::ElementType type = ElementTypeOfDtype(op.dtype);
  const hal::ReduceOp reduce = ReduceOpOfWire(op.reduce_op);
  const absl::Time deadline = absl::Now() + timeout_;
  auto others = [&]() {
    std::vector<uint32_t> hosts;
    for (uint32_t host = 0; host < topology.hosts(); ++host) {
      if (host != me) hosts.push_back(host);
    }
    return hosts;
  }();
  auto arrival_of = [&](uint32_t rank) -> const Arrival* {
    for (const Arrival& arrival : work) {
      if (arrival.rank == rank) return &arrival;
    }
    return nullptr;
  };
  // The host's ranks' inputs of `length` bytes, reduced on the host.
  auto reduce_locally = [&](Scratch& staging, uint64_t length) -> absl::Status {
    staging.resize(length);
    Scratch& operand = operand_;
    operand.resize(work.size() > 1 ? length : 0);
    for (size_t i = 0; i < work.size(); ++i) {
      uint8_t* into = i == 0 ? staging.data() : operand.data();
      if (length == 0) break;
      if (absl::Status read =
              work[i].op.send.device->CopyDeviceToHost(into, work[i].op.send.address, length);
          !read.ok()) {
        return read;
      }
      if (i > 0) ReduceOnHost(reduce, type, staging.data(), operand.data(), length / element_bytes);
    }
    return absl::OkStatus();
  };
  auto write_to = [](const RankBuffer& buffer, const uint8_t* data, uint64_t length) {
    return length == 0 ? absl::OkStatus()
                       : buffer.device->CopyHostToDevice(buffer.address, data, length);
  };
  auto reduce_into = [&](uint8_t* base, uint64_t begin, uint64_t end) {
    return [base, begin, end, element_bytes, reduce, type](
               uint64_t offset, std::span<const uint8_t> payload) -> absl::Status {
      if (!Within(offset, payload.size(), begin, end) || offset % element_bytes != 0 ||
          payload.size() % element_bytes != 0) {
        return absl::InvalidArgumentError("a host sent bytes outside its share");
      }
      ReduceOnHost(reduce, type, base + offset, payload.data(),
                   payload.size() / element_bytes);
      return absl::OkStatus();
    };
  };
  auto copy_into = [](uint8_t* base, uint64_t begin, uint64_t end) {
    return [base, begin, end](uint64_t offset,
                                  std::span<const uint8_t> payload) -> absl::Status {
      if (!Within(offset, payload.size(), begin, end)) {
        return absl::InvalidArgumentError("a host sent bytes outside its share");
      }
      std::memcpy(base + offset, payload.data(), payload.size());
      return absl::OkStatus();
    };
  };
  // The blocks of `host`'s ranks in a buffer of one block per rank.
  auto blocks_of = [&](uint32_t host, Scratch& staging) {
    std::vector<OutgoingRange> ranges;
    for (uint32_t rank : topology.ranks_of_host[host]) {
      ranges.push_back({rank * bytes, staging.data() + rank * bytes, bytes});
    }
    return ranges;
  };
  // Bytes of one block per rank of `host` whose offsets land in its blocks.
  auto in_blocks_of = [&](uint32_t host, auto use) {
    return [&, host, use](uint64_t offset, std::span<const uint8_t> payload) -> absl::Status {
      const uint64_t block = bytes == 0 ? 0 : offset / bytes;
      if (bytes == 0 || block >= topology.world_size() || topology.host_of_rank[block] != host ||
          !Within(offset, payload.size(), block * bytes, (block + 1) * bytes)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("host %d sent bytes outside its ranks' blocks", host));
      }
      return use(offset, payload);
    };
  };

  // Whether ranges are sent straight from device memory (the fabric view),
  // which stays allocated while the collective runs.
  bool send_in_place = false;
  // One step: claims what each host of `from` sends (expected(host) bytes,
  // each piece to use(host)), sends ranges(host) to each host of `to`, then
  // waits for the claims and the sends.
  auto step = [&](uint32_t phase, const std::vector<uint32_t>& from, auto expected, auto use,
                  const std::vector<uint32_t>& to, auto ranges) -> absl::Status {
    std::vector<std::unique_ptr<Incoming>> incoming;
    for (uint32_t host : from) {
      incoming.push_back(
          std::make_unique<Incoming>(*this, host, phase, op, expected(host), use(host)));
    }
    const auto tracker = send_in_place ? std::make_shared<fabric::SendTracker>() : nullptr;
    for (uint32_t host : to) {
      if (absl::Status sent = SendBytes(host, phase, op, ranges(host), deadline, tracker);
          !sent.ok()) {
        return sent;
      }
    }
    for (const auto& each : incoming) {
      if (absl::Status received = each->Wait(deadline); !received.ok()) return received;
    }
    return tracker != nullptr ? tracker->Wait(deadline) : absl::OkStatus();
  };
  auto write_to_ranks = [&](const uint8_t* data, uint64_t length) -> absl::Status {
    for (const Arrival& arrival : work) {
      if (absl::Status status = write_to(arrival.op.recv, data, length); !status.ok()) {
        return status;
      }
    }
    return absl::OkStatus();
  };
  const std::vector<uint32_t> none;

  Scratch& staging = staging_;
  switch (op.kind) {
    case NEURON_RTD_COLLECTIVE_ALL_REDUCE: {
      // The result is built in the first rank's result buffer itself when
      // the fabric reaches device memory (no staging copies), else on the
      // host.
      const RankBuffer& result = work[0].op.recv;
      uint8_t* base = bytes == 0 ? nullptr : result.device->FabricView(result.address, bytes);
      send_in_place = base != nullptr;
      if (base != nullptr) {
        if (work.size() > 1 || work[0].op.send.device != result.device ||
            work[0].op.send.address != result.address) {
          std::vector<const RankOp*> ranks;
          for (const Arrival& arrival : work) ranks.push_back(&arrival.op);
          if (absl::Status status = ReduceInto(ranks, 0, result, bytes, /*combine=*/true);
              !status.ok()) {
            return status;
          }
        }
      } else {
        if (absl::Status status = reduce_locally(staging, bytes); !status.ok()) return status;
        base = staging.data();
      }
      // Host g reduces the g-th share of the elements, then sends it to all.
      const uint64_t per_host = (op.element_count + topology.hosts() - 1) / topology.hosts();
      auto share = [&](uint32_t host) {
        const uint64_t begin = std::min<uint64_t>(host * per_host, op.element_count);
        const uint64_t end = std::min<uint64_t>(begin + per_host, op.element_count);
        return std::make_pair(begin * element_bytes, end * element_bytes);
      };
      // Not a structured binding: lambdas capture these (Clang 14 refuses).
      const uint64_t my_begin = share(me).first;
      const uint64_t my_end = share(me).second;
      auto share_of = [&](uint32_t host) {
        const auto [begin, end] = share(host);
        return std::vector<OutgoingRange>{{begin, base + begin, end - begin}};
      };
      if (absl::Status status = step(
              NEURON_RTD_FABRIC_PHASE_REDUCE, others,
              [&](uint32_t) { return my_end - my_begin; },
              [&](uint32_t) { return reduce_into(base, my_begin, my_end); }, others, share_of);
          !status.ok()) {
        return status;
      }
      if (base != nullptr) {
        FinishOnHost(reduce, type, base + my_begin, (my_end - my_begin) / element_bytes, size_,
                     op.scale);
      }
      if (absl::Status status = step(
              NEURON_RTD_FABRIC_PHASE_RESULT, others,
              [&](uint32_t host) { return share(host).second - share(host).first; },
              [&](uint32_t host) {
                return copy_into(base, share(host).first, share(host).second);
              },
              others, [&](uint32_t) { return share_of(me); });
          !status.ok()) {
        return status;
      }
      if (base != staging.data()) {
        for (size_t i = 1; i < work.size(); ++i) {
          if (absl::Status status = work[i].op.recv.device->CopyDeviceToDevice(
                  work[i].op.recv.address, *result.device, result.address, bytes);
              !status.ok()) {
            return status;
          }
        }
        return absl::OkStatus();
      }
      return write_to_ranks(staging.data(), bytes);
    }
    case NEURON_RTD_COLLECTIVE_BROADCAST: {
      const uint32_t root_host = topology.host_of_rank[op.peer];
      staging.resize(bytes);
      if (root_host == me) {
        const Arrival* root = arrival_of(op.peer);
        if (bytes > 0) {
          if (absl::Status status = root->op.send.device->CopyDeviceToHost(
                  staging.data(), root->op.send.address, bytes);
              !status.ok()) {
            return status;
          }
        }
      }
      if (absl::Status status = step(
              NEURON_RTD_FABRIC_PHASE_RESULT, root_host == me ? none : std::vector{root_host},
              [&](uint32_t) { return bytes; },
              [&](uint32_t) { return copy_into(staging.data(), 0, bytes); },
              root_host == me ? others : none,
              [&](uint32_t) {
                return std::vector<OutgoingRange>{{0, staging.data(), bytes}};
              });
          !status.ok()) {
        return status;
      }
      return write_to_ranks(staging.data(), bytes);
    }
    case NEURON_RTD_COLLECTIVE_REDUCE: {
      const uint32_t root_host = topology.host_of_rank[op.peer];
      if (absl::Status status = reduce_locally(staging, bytes); !status.ok()) return status;
      if (absl::Status status = step(
              NEURON_RTD_FABRIC_PHASE_REDUCE, root_host == me ? others : none,
              [&](uint32_t) { return bytes; },
              [&](uint32_t) { return reduce_into(staging.data(), 0, bytes); },
              root_host == me ? none : std::vector{root_host},
              [&](uint32_t) {
                return std::vector<OutgoingRange>{{0, staging.data(), bytes}};
              });
          !status.ok() || root_host != me) {
        return status;
      }
      FinishOnHost(reduce, type, staging.data(), op.element_count, size_, op.scale);
      return write_to(arrival_of(op.peer)->op.recv, staging.data(), bytes);
    }
    case NEURON_RTD_COLLECTIVE_ALL_GATHER: {
      staging.resize(bytes * size_);
      for (const Arrival& arrival : work) {
        if (bytes == 0) break;
        if (absl::Status status = arrival.op.send.device->CopyDeviceToHost(
                staging.data() + arrival.rank * bytes, arrival.op.send.address, bytes);
            !status.ok()) {
          return status;
        }
      }
      if (absl::Status status = step(
              NEURON_RTD_FABRIC_PHASE_RESULT, others,
              [&](uint32_t host) { return bytes * topology.ranks_of_host[host].size(); },
              [&](uint32_t host) {
                return in_blocks_of(host, copy_into(staging.data(), 0, staging.size()));
              },
              others, [&](uint32_t) { return blocks_of(me, staging); });
          !status.ok()) {
        return status;
      }
      return write_to_ranks(staging.data(), staging.size());
    }
    case NEURON_RTD_COLLECTIVE_REDUCE_SCATTER: {
      if (absl::Status status = reduce_locally(staging, bytes * size_); !status.ok()) {
        return status;
      }
      if (absl::Status status = step(
              NEURON_RTD_FABRIC_PHASE_REDUCE, others,
              [&](uint32_t) { return bytes * topology.local_ranks().size(); },
              [&](uint32_t) { return in_blocks_of(me, reduce_into(staging.data(), 0, staging.size())); },
              others, [&](uint32_t host) { return blocks_of(host, staging); });
          !status.ok()) {
        return status;
      }
      for (const Arrival& arrival : work) {
        uint8_t* block = staging.data() + arrival.rank * bytes;
        FinishOnHost(reduce, type, block, op.element_count, size_, op.scale);
        if (absl::Status status = write_to(arrival.op.recv, block, bytes); !status.ok()) {
          return status;
        }
      }
      return absl::OkStatus();
    }
    case NEURON_RTD_COLLECTIVE_BARRIER:
      return step(
          NEURON_RTD_FABRIC_PHASE_RESULT, others, [](uint32_t) { return uint64_t{0}; },
          [&](uint32_t) { return copy_into(staging.data(), 0, 0); }, others,
          [](uint32_t) { return std::vector<OutgoingRange>{}; });
    default:
      return absl::InvalidArgumentError(
          absl::StrFormat("collective kind %d does not run across hosts", op.kind));
  }
}

}  // namespace neuron::rtd::collectives

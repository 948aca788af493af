// The steps of collectives between hosts, run by a communicator's exchange
// thread. Every collective reduces or gathers its host's ranks first (on the
// host), then moves between hosts; results are then copied to the host's
// ranks. All-reduces run by the ring or recursive doubling
// (communicator_all_reduce.cc); the others directly: each host sends each
// other host its share in one step, so every host sends and receives (H-1)/H
// of the data, as a ring would, in one step instead of H-1.
#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "daemon/collectives/communicator.h"
#include "daemon/collectives/host_reduce.h"
#include "daemon/collectives/internal/arrivals.h"
#include "daemon/collectives/internal/communicator_incoming.h"
#include "daemon/collectives/internal/fabric_messages.h"

namespace neuron::rtd::collectives {
namespace {

using internal::BytesOf;
using internal::CopyArrivals;
using internal::Describe;
using internal::kHeaderBytes;
using internal::ReduceArrivals;
using internal::Within;

}  // namespace

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

absl::Status Communicator::SendBytes(uint32_t host, StepId step,
                                     const neuron_rtd_collective_op& op,
                                     const std::vector<OutgoingRange>& ranges, absl::Time deadline,
                                     const std::shared_ptr<fabric::SendTracker>& tracker) {
  absl::StatusOr<fabric::PeerId> peer = PeerOf(host);
  if (!peer.ok()) return peer.status();
  neuron_rtd_fabric_header header = HeaderFor(NEURON_RTD_FABRIC_DATA);
  header.phase = step.phase;
  header.step = step.step;
  header.algorithm = step.algorithm;
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

absl::Status Communicator::ReduceRanksIntoStaging(const Work& work, uint64_t length) {
  const neuron_rtd_collective_op& op = work[0].op.op;
  const uint64_t element_bytes = neuron_rtd_dtype_bytes(op.dtype);
  staging_.resize(length);
  operand_.resize(work.size() > 1 ? length : 0);
  for (size_t i = 0; i < work.size() && length > 0; ++i) {
    uint8_t* into = i == 0 ? staging_.data() : operand_.data();
    if (absl::Status read =
            work[i].op.send.device->CopyDeviceToHost(into, work[i].op.send.address, length);
        !read.ok()) {
      return read;
    }
    if (i > 0) {
      ReduceOnHost(ReduceOpOfWire(op.reduce_op), ElementTypeOfDtype(op.dtype), staging_.data(),
                   operand_.data(), length / element_bytes);
    }
  }
  return absl::OkStatus();
}

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
  auto write_to = [](const RankBuffer& buffer, const uint8_t* data, uint64_t length) {
    return length == 0 ? absl::OkStatus()
                       : buffer.device->CopyHostToDevice(buffer.address, data, length);
  };
  auto reduce_into = [&](uint8_t* base, uint64_t begin, uint64_t end) {
    return ReduceArrivals(base, begin, end, element_bytes, reduce, type);
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

  // One step: claims what each host of `from` sends (expected(host) bytes,
  // each piece to use(host)), sends ranges(host) to each host of `to`, then
  // waits for the claims and the sends.
  auto step = [&](uint32_t phase, const std::vector<uint32_t>& from, auto expected, auto use,
                  const std::vector<uint32_t>& to, auto ranges) -> absl::Status {
    std::vector<std::unique_ptr<Incoming>> incoming;
    for (uint32_t host : from) {
      incoming.push_back(std::make_unique<Incoming>(*this, host, StepId{.phase = phase}, op,
                                                    expected(host), use(host)));
    }
    for (uint32_t host : to) {
      if (absl::Status sent =
              SendBytes(host, StepId{.phase = phase}, op, ranges(host), deadline, nullptr);
          !sent.ok()) {
        return sent;
      }
    }
    for (const auto& each : incoming) {
      if (absl::Status received = each->Wait(deadline); !received.ok()) return received;
    }
    return absl::OkStatus();
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
    case NEURON_RTD_COLLECTIVE_ALL_REDUCE:
      return AllReduceBetweenHosts(work);
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
              [&](uint32_t) { return CopyArrivals(staging.data(), 0, bytes); },
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
      if (absl::Status status = ReduceRanksIntoStaging(work, bytes); !status.ok()) return status;
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
                return in_blocks_of(host, CopyArrivals(staging.data(), 0, staging.size()));
              },
              others, [&](uint32_t) { return blocks_of(me, staging); });
          !status.ok()) {
        return status;
      }
      return write_to_ranks(staging.data(), staging.size());
    }
    case NEURON_RTD_COLLECTIVE_REDUCE_SCATTER: {
      if (absl::Status status = ReduceRanksIntoStaging(work, bytes * size_); !status.ok()) {
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
          [&](uint32_t) { return CopyArrivals(staging.data(), 0, 0); }, others,
          [](uint32_t) { return std::vector<OutgoingRange>{}; });
    default:
      return absl::InvalidArgumentError(
          absl::StrFormat("collective kind %d does not run across hosts", op.kind));
  }
}
}  // namespace neuron::rtd::collectives

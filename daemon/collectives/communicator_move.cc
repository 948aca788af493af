// Moving a collective's data between the ranks of this host, on the
// device (Communicator::Move, and the reductions the exchanges with other
// hosts start from).
#include <algorithm>
#include <vector>

#include "daemon/collectives/communicator.h"
#include "daemon/collectives/host_reduce.h"

namespace neuron::rtd::collectives {
namespace {

// The slice of an all-reduce's result that is reduced and then copied to
// the other ranks before the next: small enough to stay in the cache.
constexpr uint64_t kAllReduceSliceBytes = 256 << 10;

uint64_t ElementBytesOf(const neuron_rtd_collective_op& op) {
  return op.element_count * neuron_rtd_dtype_bytes(op.dtype);
}

bool Overlap(hal::Device* a_device, uint64_t a, hal::Device* b_device, uint64_t b,
             uint64_t bytes) {
  return a_device == b_device && a < b + bytes && b < a + bytes;
}

}  // namespace

absl::Status ReduceInto(const std::vector<const RankOp*>& ranks, uint64_t offset,
                        const RankBuffer& destination, uint64_t bytes, bool combine) {
  const neuron_rtd_collective_op& first = ranks.front()->op;
  std::vector<hal::ReduceOperand> sources;
  sources.reserve(ranks.size());
  for (const RankOp* rank : ranks) {
    sources.push_back({rank->send.device, rank->send.address + offset});
  }
  // The destination may alias the first source only: put the one it is
  // (an in-place collective) first, and refuse any other overlap.
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].device == destination.device && sources[i].address == destination.address) {
      std::swap(sources[0], sources[i]);
      break;
    }
  }
  for (size_t i = 1; i < sources.size(); ++i) {
    if (Overlap(sources[i].device, sources[i].address, destination.device, destination.address,
                bytes)) {
      return absl::InvalidArgumentError(
          "a rank's result buffer overlaps another rank's input buffer");
    }
  }
  const hal::ReduceOp op = ReduceOpOfWire(first.reduce_op);
  hal::Reduction reduction{.op = combine ? CombiningOp(op) : op,
                           .type = ElementTypeOfDtype(first.dtype),
                           .count = bytes / neuron_rtd_dtype_bytes(first.dtype),
                           .scale = first.scale};
  return destination.device->Reduce(reduction, destination.address, sources);
}

namespace {

absl::Status Copy(const RankBuffer& to, uint64_t to_offset, const RankBuffer& from,
                  uint64_t from_offset, uint64_t bytes) {
  if (to.device == from.device && to.address + to_offset == from.address + from_offset) {
    return absl::OkStatus();
  }
  return to.device->CopyDeviceToDevice(to.address + to_offset, *from.device,
                                       from.address + from_offset, bytes);
}

}  // namespace

absl::Status Communicator::Move(const Work& work) {
  const neuron_rtd_collective_op& first = work[0].op.op;
  const uint64_t bytes = ElementBytesOf(first);
  if (bytes == 0) return absl::OkStatus();
  std::vector<const RankOp*> ranks;
  for (const Arrival& arrival : work) ranks.push_back(&arrival.op);
  switch (first.kind) {
    case NEURON_RTD_COLLECTIVE_SEND:
      return Copy(ranks[1]->recv, 0, ranks[0]->send, 0, bytes);
    case NEURON_RTD_COLLECTIVE_ALL_REDUCE: {
      // Slice by slice, so that each slice of the result is still in the
      // cache when it is copied to the other ranks.
      const uint64_t element_bytes = neuron_rtd_dtype_bytes(first.dtype);
      const uint64_t slice = kAllReduceSliceBytes / element_bytes * element_bytes;
      for (uint64_t offset = 0; offset < bytes; offset += slice) {
        const uint64_t length = std::min(slice, bytes - offset);
        RankBuffer result = ranks[0]->recv;
        result.address += offset;
        if (absl::Status status = ReduceInto(ranks, offset, result, length, /*combine=*/false); !status.ok()) {
          return status;
        }
        for (size_t rank = 1; rank < ranks.size(); ++rank) {
          if (absl::Status status = Copy(ranks[rank]->recv, offset, result, 0, length);
              !status.ok()) {
            return status;
          }
        }
      }
      return absl::OkStatus();
    }
    case NEURON_RTD_COLLECTIVE_REDUCE:
      return ReduceInto(ranks, 0, ranks[first.peer]->recv, bytes, /*combine=*/false);
    case NEURON_RTD_COLLECTIVE_REDUCE_SCATTER:
      for (size_t rank = 0; rank < ranks.size(); ++rank) {
        if (absl::Status status = ReduceInto(ranks, rank * bytes, ranks[rank]->recv, bytes, /*combine=*/false);
            !status.ok()) {
          return status;
        }
      }
      return absl::OkStatus();
    case NEURON_RTD_COLLECTIVE_ALL_GATHER:
      for (size_t from = 0; from < ranks.size(); ++from) {
        for (size_t to = 0; to < ranks.size(); ++to) {
          if (absl::Status status = Copy(ranks[to]->recv, from * bytes, ranks[from]->send, 0, bytes);
              !status.ok()) {
            return status;
          }
        }
      }
      return absl::OkStatus();
    case NEURON_RTD_COLLECTIVE_BROADCAST: {
      const RankBuffer& source = ranks[first.peer]->send;
      for (const RankOp* rank : ranks) {
        if (absl::Status status = Copy(rank->recv, 0, source, 0, bytes); !status.ok()) {
          return status;
        }
      }
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

}  // namespace neuron::rtd::collectives

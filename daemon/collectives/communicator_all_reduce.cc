// All-reduce between hosts, on the exchange thread: the host's ranks are
// reduced into one buffer (the first rank's result buffer when the fabric
// reaches device memory, else host staging), which is reduced with every
// other host's by the ring (large buffers) or by recursive doubling (small
// ones; host_algorithm.h), then copied to the host's other ranks.
#include <memory>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "daemon/collectives/communicator.h"
#include "daemon/collectives/host_algorithm.h"
#include "daemon/collectives/host_reduce.h"
#include "daemon/collectives/internal/arrivals.h"
#include "daemon/collectives/internal/communicator_incoming.h"
#include "daemon/collectives/internal/fabric_messages.h"
#include "daemon/collectives/internal/ring_progress.h"

namespace neuron::rtd::collectives {
namespace {

using internal::ArrivalUse;
using internal::CopyArrivals;
using internal::kHeaderBytes;
using internal::ReduceArrivals;
using internal::RingProgress;

}  // namespace

absl::Status Communicator::AllReduceBetweenHosts(const Work& work) {
  const neuron_rtd_collective_op& op = work[0].op.op;
  const uint64_t bytes = op.element_count * neuron_rtd_dtype_bytes(op.dtype);
  const absl::Time deadline = absl::Now() + timeout_;
  const RankBuffer& result = work[0].op.recv;
  uint8_t* base = bytes == 0 ? nullptr : result.device->FabricView(result.address, bytes);
  const bool in_place = base != nullptr;
  if (in_place) {
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
    if (absl::Status status = ReduceRanksIntoStaging(work, bytes); !status.ok()) return status;
    base = staging_.data();
  }
  const absl::Status reduced =
      AllReduceAlgorithm(algorithms_, bytes) == NEURON_RTD_FABRIC_ALGORITHM_RECURSIVE_DOUBLING
          ? DoublingAllReduce(op, base, deadline)
          : RingAllReduce(op, base, in_place, deadline);
  if (!reduced.ok() || bytes == 0) return reduced;
  for (size_t i = in_place ? 1 : 0; i < work.size(); ++i) {
    const RankBuffer& recv = work[i].op.recv;
    if (absl::Status status = in_place ? recv.device->CopyDeviceToDevice(
                                             recv.address, *result.device, result.address, bytes)
                                       : recv.device->CopyHostToDevice(recv.address, base, bytes);
        !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

// 2(H-1) steps to the next host: the reduce-scatter's, then the
// all-gather's. Every step's incoming segment is claimed up front and
// reduced or copied into `base` piece by piece as it arrives; each piece is
// forwarded in the next step as soon as it is in place (the pipeline).
// Writing into a segment that an earlier step sent in place is safe: the
// bytes written come back only after every host downstream has received
// what was sent.
absl::Status Communicator::RingAllReduce(const neuron_rtd_collective_op& op, uint8_t* base,
                                         bool in_place, absl::Time deadline) {
  const uint32_t hosts = topology_->hosts();
  const uint32_t me = topology_->host;
  const uint32_t left = (me + hosts - 1) % hosts;
  const uint32_t right = (me + 1) % hosts;
  const uint64_t element_bytes = neuron_rtd_dtype_bytes(op.dtype);
  const hal::ElementType type = ElementTypeOfDtype(op.dtype);
  const hal::ReduceOp reduce = ReduceOpOfWire(op.reduce_op);
  const uint32_t half = hosts - 1;
  auto ring_step = [&](uint32_t step) {
    return step < half ? RingReduceScatterStep(me, hosts, step)
                       : RingAllGatherStep(me, hosts, step - half);
  };
  auto id_of = [&](uint32_t step) {
    return StepId{
        .phase = step < half ? NEURON_RTD_FABRIC_PHASE_REDUCE : NEURON_RTD_FABRIC_PHASE_RESULT,
        .step = step < half ? step : step - half,
        .algorithm = NEURON_RTD_FABRIC_ALGORITHM_RING};
  };
  auto share = [&](uint32_t segment) {
    return ShareOf(segment, hosts, op.element_count, element_bytes);
  };
  std::vector<std::pair<uint64_t, uint64_t>> received;
  for (uint32_t step = 0; step < 2 * half; ++step) {
    received.push_back(share(ring_step(step).receive_segment));
  }
  const uint64_t chunk = router_->transport().max_message_bytes() - kHeaderBytes;
  RingProgress progress(received, chunk - chunk % element_bytes);
  std::vector<std::unique_ptr<Incoming>> incoming;
  for (uint32_t step = 0; step < 2 * half; ++step) {
    const uint64_t begin = received[step].first;
    const uint64_t end = received[step].second;
    ArrivalUse apply = step < half ? ReduceArrivals(base, begin, end, element_bytes, reduce, type)
                                   : CopyArrivals(base, begin, end);
    incoming.push_back(std::make_unique<Incoming>(
        *this, left, id_of(step), op, end - begin,
        [apply = std::move(apply), &progress, step](
            uint64_t offset, std::span<const uint8_t> payload) -> absl::Status {
          if (absl::Status applied = apply(offset, payload); !applied.ok()) return applied;
          return progress.Arrived(step, offset, payload.size());
        },
        [&progress](const absl::Status& status) {
          if (!status.ok()) progress.Fail(status);
        }));
  }
  const auto tracker = in_place ? std::make_shared<fabric::SendTracker>() : nullptr;
  // Whatever the outcome, the fabric stops reading `base` before the
  // collective settles and its buffers may go (bounded by the deadline).
  absl::Cleanup sends_finished = [&] {
    if (tracker != nullptr) (void)tracker->Wait(deadline);
  };
  auto send = [&](uint32_t step, uint64_t begin, uint64_t end) {
    return SendBytes(right, id_of(step), op, {{begin, base + begin, end - begin}}, deadline,
                     tracker);
  };
  for (uint32_t step = 0; step < 2 * half; ++step) {
    // What this step sends is what the previous one received.
    if (step == 0 || step == half) {
      if (step == half) {
        if (absl::Status status = incoming[half - 1]->Wait(deadline); !status.ok()) {
          return status;
        }
        FinishOnHost(reduce, type, base + received[half - 1].first,
                     (received[half - 1].second - received[half - 1].first) / element_bytes,
                     size_, op.scale);
      }
      const auto [begin, end] = share(ring_step(step).send_segment);
      if (absl::Status sent = send(step, begin, end); !sent.ok()) return sent;
      continue;
    }
    if (progress.pieces(step - 1) == 0) {
      if (absl::Status sent = send(step, 0, 0); !sent.ok()) return sent;
      continue;
    }
    for (uint64_t piece = 0; piece < progress.pieces(step - 1); ++piece) {
      if (absl::Status ready = progress.WaitForPiece(step - 1, piece, deadline); !ready.ok()) {
        if (ready.code() != absl::StatusCode::kDeadlineExceeded) return ready;
        // The claim names the host it waited for.
        absl::Status claimed = incoming[step - 1]->Wait(deadline);
        return claimed.ok() ? ready : claimed;
      }
      const auto [begin, end] = progress.Piece(step - 1, piece);
      if (absl::Status sent = send(step, begin, end); !sent.ok()) return sent;
    }
  }
  for (const auto& each : incoming) {
    if (absl::Status status = each->Wait(deadline); !status.ok()) return status;
  }
  std::move(sends_finished).Cancel();
  return tracker != nullptr ? tracker->Wait(deadline) : absl::OkStatus();
}

// Each exchange sends the whole buffer (copied: `base` is reduced into
// right after) and only then claims the partner's, which may have been
// queued meanwhile: small buffers, where the copy costs less than a step.
// Both partners combine the same two operands, so every host ends with
// the same bits.
absl::Status Communicator::DoublingAllReduce(const neuron_rtd_collective_op& op, uint8_t* base,
                                             absl::Time deadline) {
  const uint64_t element_bytes = neuron_rtd_dtype_bytes(op.dtype);
  const uint64_t bytes = op.element_count * element_bytes;
  const hal::ElementType type = ElementTypeOfDtype(op.dtype);
  const hal::ReduceOp reduce = ReduceOpOfWire(op.reduce_op);
  const DoublingPlan plan = PlanRecursiveDoubling(topology_->host, topology_->hosts());
  const std::vector<OutgoingRange> whole{{0, base, bytes}};
  auto step_id = [](uint32_t phase, uint32_t step) {
    return StepId{.phase = phase, .step = step,
                  .algorithm = NEURON_RTD_FABRIC_ALGORITHM_RECURSIVE_DOUBLING};
  };
  auto send = [&](uint32_t host, StepId id) {
    return SendBytes(host, id, op, whole, deadline, nullptr);
  };
  auto receive = [&](uint32_t host, StepId id, ArrivalUse use) {
    Incoming incoming(*this, host, id, op, bytes, std::move(use));
    return incoming.Wait(deadline);
  };
  const StepId fold = step_id(NEURON_RTD_FABRIC_PHASE_REDUCE, 0);
  const StepId unfold = step_id(NEURON_RTD_FABRIC_PHASE_RESULT, 0);
  if (plan.extra) {
    if (absl::Status sent = send(plan.fold_partner, fold); !sent.ok()) return sent;
    return receive(plan.fold_partner, unfold, CopyArrivals(base, 0, bytes));
  }
  if (plan.has_fold_partner) {
    if (absl::Status status = receive(plan.fold_partner, fold,
                                      ReduceArrivals(base, 0, bytes, element_bytes, reduce, type));
        !status.ok()) {
      return status;
    }
  }
  for (uint32_t exchange = 0; exchange < plan.partners.size(); ++exchange) {
    const StepId id = step_id(NEURON_RTD_FABRIC_PHASE_REDUCE, exchange + 1);
    if (absl::Status sent = send(plan.partners[exchange], id); !sent.ok()) return sent;
    if (absl::Status status =
            receive(plan.partners[exchange], id,
                    ReduceArrivals(base, 0, bytes, element_bytes, reduce, type));
        !status.ok()) {
      return status;
    }
  }
  FinishOnHost(reduce, type, base, op.element_count, size_, op.scale);
  return plan.has_fold_partner ? send(plan.fold_partner, unfold) : absl::OkStatus();
}

}  // namespace neuron::rtd::collectives

// COLLECTIVE records: a stream posts its group to the communicator and waits,
// as at a WAIT, until its peers' groups have arrived and the data has moved.
#include "absl/strings/str_format.h"
#include "daemon/queue/core_queue.h"

namespace neuron::rtd::queue {

absl::StatusOr<std::vector<collectives::RankOp>> CoreQueue::ResolveCollective(
    ExecutionContext& context, const CollectiveCommand& command, uint32_t rank, uint32_t size) {
  std::vector<collectives::RankOp> ops;
  ops.reserve(command.ops.size());
  auto resolve = [&](uint64_t address, uint64_t bytes,
                     collectives::RankBuffer& buffer) -> absl::Status {
    if (bytes == 0) return absl::OkStatus();
    absl::StatusOr<DeviceSpan> span = context.ResolveDevice(address, bytes);
    if (!span.ok()) return span.status();
    buffer = collectives::RankBuffer{
        .segment = std::move(span->segment), .device = span->device, .address = address};
    return absl::OkStatus();
  };
  for (size_t i = 0; i < command.ops.size(); ++i) {
    const neuron_rtd_collective_op& op = command.ops[i];
    absl::StatusOr<collectives::OperationExtents> extents = collectives::ExtentsOf(op, rank, size);
    if (!extents.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("operation %d: %s", i, extents.status().message()));
    }
    collectives::RankOp resolved{.op = op};
    if (absl::Status status = resolve(op.send_address, extents->send_bytes, resolved.send);
        !status.ok()) {
      return absl::Status(status.code(), absl::StrFormat("operation %d (%s), send buffer: %s", i,
                                                         collectives::CollectiveKindName(op.kind),
                                                         status.message()));
    }
    if (absl::Status status = resolve(op.recv_address, extents->recv_bytes, resolved.recv);
        !status.ok()) {
      return absl::Status(status.code(), absl::StrFormat("operation %d (%s), receive buffer: %s",
                                                         i, collectives::CollectiveKindName(op.kind),
                                                         status.message()));
    }
    ops.push_back(std::move(resolved));
  }
  return ops;
}

void CoreQueue::AbandonCollective(ExecutionContext& context, const DecodedRecord& record) {
  const auto& command = std::get<CollectiveCommand>(record.command);
  absl::StatusOr<CommunicatorMembership> membership =
      context.FindCommunicator(command.communicator_handle);
  if (!membership.ok()) return;
  membership->communicator->Abort(absl::AbortedError(absl::StrFormat(
      "communicator %s: rank %d's stream failed before its %s (sequence %d); that rank's "
      "earlier error is the cause",
      membership->communicator->name(), membership->rank,
      collectives::CollectiveKindName(command.ops.front().kind), command.ops.front().sequence)));
}

CoreQueue::Outcome CoreQueue::ExecuteCollective(const std::shared_ptr<Stream>& stream,
                                                ExecutionContext& context,
                                                const DecodedRecord& record) {
  const neuron_rtd_record_header& header = record.header;
  auto finish = [&](const absl::Status& status) {
    stream->posted_collective.reset();
    stream->Consume(header.length, header.sequence);
    Finish(*stream, context, record, status);
    return Outcome::kDone;
  };
  if (stream->posted_collective == nullptr) {
    const auto& command = std::get<CollectiveCommand>(record.command);
    absl::StatusOr<CommunicatorMembership> membership =
        context.FindCommunicator(command.communicator_handle);
    if (!membership.ok()) return finish(membership.status());
    collectives::Communicator& communicator = *membership->communicator;
    absl::StatusOr<std::vector<collectives::RankOp>> ops =
        ResolveCollective(context, command, membership->rank, communicator.size());
    if (!ops.ok()) return finish(ops.status());
    absl::StatusOr<std::shared_ptr<collectives::GroupCompletion>> posted =
        communicator.Post(membership->rank, *std::move(ops), [this] { WakeIfWaiting(); });
    if (!posted.ok()) return finish(posted.status());
    stream->posted_collective = *std::move(posted);
  }
  // Announce the wait before checking it, so that a group settling on
  // another thread during this check always sees waiting_streams_.
  if (!stream->waiting.exchange(true)) waiting_streams_.fetch_add(1, std::memory_order_seq_cst);
  if (!stream->posted_collective->done()) return Outcome::kBlocked;
  if (stream->waiting.exchange(false)) waiting_streams_.fetch_sub(1, std::memory_order_seq_cst);
  return finish(stream->posted_collective->status());
}

}  // namespace neuron::rtd::queue

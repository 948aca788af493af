#include "daemon/queue/record_decoder.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_format.h"
#include "daemon/hal/device.h"

namespace neuron::rtd::queue {
namespace {

absl::Status Invalid(const neuron_rtd_record_header& header, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("malformed %s record (sequence %d): %s",
                                                    OpcodeName(header.opcode), header.sequence,
                                                    what));
}

uint32_t FixedPayloadBytes(uint16_t opcode) {
  switch (opcode) {
    case NEURON_RTD_OP_COPY:
      return sizeof(neuron_rtd_copy_payload);
    case NEURON_RTD_OP_FILL:
      return sizeof(neuron_rtd_fill_payload);
    case NEURON_RTD_OP_WAIT:
      return sizeof(neuron_rtd_wait_payload);
    case NEURON_RTD_OP_LAUNCH:
      return sizeof(neuron_rtd_launch_payload);
    case NEURON_RTD_OP_COLLECTIVE:
      return sizeof(neuron_rtd_collective_payload);
    case NEURON_RTD_OP_MARKER:
      return sizeof(neuron_rtd_marker_payload);
    default:
      return 0;
  }
}

template <typename T>
T Load(std::span<const uint8_t> bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

absl::Status CheckLocation(const neuron_rtd_record_header& header,
                           const neuron_rtd_location& location, std::string_view which) {
  if (location.reserved0 != 0) return Invalid(header, absl::StrFormat("%s.reserved0 is not 0", which));
  switch (location.kind) {
    case NEURON_RTD_LOCATION_DEVICE:
    case NEURON_RTD_LOCATION_STAGING:
      if (location.memory_id != 0) {
        return Invalid(header, absl::StrFormat("%s.memory_id must be 0 for this kind", which));
      }
      return absl::OkStatus();
    case NEURON_RTD_LOCATION_HOST_MEMORY:
      return absl::OkStatus();
    default:
      return Invalid(header, absl::StrFormat("%s.kind %d is not a location kind", which,
                                             location.kind));
  }
}

// The most bytes one operation's buffer may span: more than any device's
// HBM, small enough that sizes computed from it never overflow.
constexpr uint64_t kMaxCollectiveBufferBytes = 1ull << 46;

absl::Status CheckCollectiveOp(const neuron_rtd_record_header& header,
                               const neuron_rtd_collective_op& op, uint32_t index) {
  auto invalid = [&](std::string_view what) {
    return Invalid(header, absl::StrFormat("operation %d: %s", index, what));
  };
  if (op.kind == NEURON_RTD_COLLECTIVE_INVALID || op.kind >= NEURON_RTD_COLLECTIVE_KIND_COUNT_) {
    return invalid(absl::StrFormat("kind %d is not a collective", op.kind));
  }
  const bool reduces = op.kind == NEURON_RTD_COLLECTIVE_ALL_REDUCE ||
                       op.kind == NEURON_RTD_COLLECTIVE_REDUCE_SCATTER ||
                       op.kind == NEURON_RTD_COLLECTIVE_REDUCE;
  if (op.reduce_op >= NEURON_RTD_REDUCE_OP_COUNT_) {
    return invalid(absl::StrFormat("reduce op %d is not known", op.reduce_op));
  }
  if (reduces != (op.reduce_op != NEURON_RTD_REDUCE_NONE)) {
    return invalid(reduces ? "a reducing collective needs a reduce op"
                           : "only ALL_REDUCE, REDUCE_SCATTER and REDUCE take a reduce op");
  }
  if (op.reduce_op == NEURON_RTD_REDUCE_PREMUL_SUM ? !std::isfinite(op.scale)
                                                    : op.scale != 0.0) {
    return invalid("scale must be finite for PREMUL_SUM and 0 otherwise");
  }
  const uint32_t element_bytes = neuron_rtd_dtype_bytes(op.dtype);
  if (element_bytes == 0 && op.kind != NEURON_RTD_COLLECTIVE_BARRIER) {
    return invalid(absl::StrFormat("dtype %d is not known", op.dtype));
  }
  if (op.kind == NEURON_RTD_COLLECTIVE_BARRIER &&
      (op.element_count != 0 || op.send_address != 0 || op.recv_address != 0 || op.peer != 0)) {
    return invalid("a BARRIER names no buffers, count or peer");
  }
  if (element_bytes != 0 && op.element_count > kMaxCollectiveBufferBytes / element_bytes) {
    return invalid(absl::StrFormat("%d elements exceed the largest buffer", op.element_count));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view OpcodeName(uint16_t opcode) { return neuron_rtd_opcode_name(opcode); }

absl::Status CheckRecordFraming(const neuron_rtd_record_header& header, uint64_t available,
                                uint64_t contiguous) {
  if (header.length < sizeof(neuron_rtd_record_header) ||
      header.length % NEURON_RTD_RECORD_ALIGN != 0 || header.length > NEURON_RTD_MAX_RECORD_BYTES) {
    return Invalid(header, absl::StrFormat("length %d is not a multiple of %d between %d and %d",
                                           header.length, NEURON_RTD_RECORD_ALIGN,
                                           sizeof(neuron_rtd_record_header),
                                           NEURON_RTD_MAX_RECORD_BYTES));
  }
  if (header.length > available) {
    return Invalid(header, absl::StrFormat("length %d exceeds the %d bytes published",
                                           header.length, available));
  }
  if (header.length > contiguous) {
    return Invalid(header, absl::StrFormat("length %d runs past the end of the ring (%d bytes "
                                           "left); the producer must pad instead",
                                           header.length, contiguous));
  }
  return absl::OkStatus();
}

absl::StatusOr<DecodedRecord> DecodeRecord(std::span<const uint8_t> bytes,
                                           uint64_t last_sequence) {
  DecodedRecord record;
  if (bytes.size() < sizeof(neuron_rtd_record_header)) {
    return absl::InvalidArgumentError("record shorter than its header");
  }
  std::memcpy(&record.header, bytes.data(), sizeof(record.header));
  const neuron_rtd_record_header& header = record.header;
  if (header.length != bytes.size()) {
    return Invalid(header, absl::StrFormat("length %d does not match the %d bytes read",
                                           header.length, bytes.size()));
  }
  if (header.opcode == NEURON_RTD_OP_INVALID || header.opcode >= NEURON_RTD_OP_COUNT_) {
    return Invalid(header, absl::StrFormat("opcode %d is not known", header.opcode));
  }
  if ((header.flags & ~NEURON_RTD_RECORD_FLAGS_KNOWN) != 0) {
    return Invalid(header, absl::StrFormat("flags 0x%x has unknown bits", header.flags));
  }
  if (header.reserved0 != 0) return Invalid(header, "reserved header fields are not 0");
  if (header.correlation_id != 0 && (header.flags & NEURON_RTD_RECORD_FLAG_PROFILE) == 0) {
    return Invalid(header, "a correlation id without the PROFILE flag");
  }
  if (header.op_name_bytes > NEURON_RTD_MAX_OP_NAME_BYTES) {
    return Invalid(header, absl::StrFormat("op name of %d bytes exceeds %d", header.op_name_bytes,
                                           NEURON_RTD_MAX_OP_NAME_BYTES));
  }
  const uint64_t body = uint64_t{header.payload_bytes} + header.op_name_bytes;
  if (body > header.length - sizeof(neuron_rtd_record_header)) {
    return Invalid(header, absl::StrFormat("payload %d and op name %d bytes exceed the length %d",
                                           header.payload_bytes, header.op_name_bytes,
                                           header.length));
  }
  if (header.opcode == NEURON_RTD_OP_PAD) {
    if (header.sequence != 0 || header.payload_bytes != 0 || header.op_name_bytes != 0) {
      return Invalid(header, "PAD records carry no sequence, payload or name");
    }
    record.command = PadCommand{};
    return record;
  }
  if (header.sequence <= last_sequence) {
    return Invalid(header, absl::StrFormat("sequence %d does not follow the stream's %d",
                                           header.sequence, last_sequence));
  }
  const size_t payload_offset = sizeof(neuron_rtd_record_header);
  const std::span<const uint8_t> payload = bytes.subspan(payload_offset, header.payload_bytes);
  record.op_name.assign(reinterpret_cast<const char*>(bytes.data()) + payload_offset +
                            header.payload_bytes,
                        header.op_name_bytes);

  const uint32_t fixed = FixedPayloadBytes(header.opcode);
  if (header.opcode == NEURON_RTD_OP_SIGNAL) {
    if (header.payload_bytes != 0) return Invalid(header, "SIGNAL carries no payload");
    record.command = SignalCommand{};
    return record;
  }
  if (header.opcode == NEURON_RTD_OP_LAUNCH) {
    if (header.payload_bytes < fixed) return Invalid(header, "payload shorter than a launch");
    const auto launch = Load<neuron_rtd_launch_payload>(payload, 0);
    if (launch.arg_count > NEURON_RTD_MAX_LAUNCH_ARGS) {
      return Invalid(header, absl::StrFormat("%d arguments exceed %d", launch.arg_count,
                                             NEURON_RTD_MAX_LAUNCH_ARGS));
    }
    const uint64_t expected = fixed + uint64_t{launch.arg_count} * 8 + launch.scalar_bytes;
    if (expected != header.payload_bytes) {
      return Invalid(header, absl::StrFormat("payload is %d bytes; %d arguments and %d scalar "
                                             "bytes need %d",
                                             header.payload_bytes, launch.arg_count,
                                             launch.scalar_bytes, expected));
    }
    LaunchCommand command;
    command.executable_id = launch.executable_id;
    command.arguments.resize(launch.arg_count);
    if (launch.arg_count > 0) {
      std::memcpy(command.arguments.data(), payload.data() + fixed, launch.arg_count * 8ull);
    }
    const size_t scalars_offset = fixed + launch.arg_count * 8ull;
    command.scalars.assign(payload.begin() + scalars_offset, payload.end());
    record.command = std::move(command);
    return record;
  }
  if (header.opcode == NEURON_RTD_OP_COLLECTIVE) {
    if (header.payload_bytes < fixed) return Invalid(header, "payload shorter than a collective");
    const auto group = Load<neuron_rtd_collective_payload>(payload, 0);
    if (group.reserved0 != 0) return Invalid(header, "collective.reserved0 is not 0");
    if (group.op_count == 0 || group.op_count > NEURON_RTD_MAX_COLLECTIVE_OPS) {
      return Invalid(header, absl::StrFormat("%d operations; a group holds 1 to %d",
                                             group.op_count, NEURON_RTD_MAX_COLLECTIVE_OPS));
    }
    const uint64_t expected = fixed + uint64_t{group.op_count} * sizeof(neuron_rtd_collective_op);
    if (expected != header.payload_bytes) {
      return Invalid(header, absl::StrFormat("payload is %d bytes; %d operations need %d",
                                             header.payload_bytes, group.op_count, expected));
    }
    CollectiveCommand command;
    command.communicator_handle = group.communicator_handle;
    command.ops.resize(group.op_count);
    std::memcpy(command.ops.data(), payload.data() + fixed,
                group.op_count * sizeof(neuron_rtd_collective_op));
    for (uint32_t i = 0; i < group.op_count; ++i) {
      if (absl::Status status = CheckCollectiveOp(header, command.ops[i], i); !status.ok()) {
        return status;
      }
    }
    record.command = std::move(command);
    return record;
  }
  if (header.payload_bytes != fixed) {
    return Invalid(header, absl::StrFormat("payload is %d bytes, %s takes %d",
                                           header.payload_bytes, OpcodeName(header.opcode), fixed));
  }
  switch (header.opcode) {
    case NEURON_RTD_OP_COPY: {
      const auto copy = Load<neuron_rtd_copy_payload>(payload, 0);
      if (absl::Status status = CheckLocation(header, copy.src, "src"); !status.ok()) return status;
      if (absl::Status status = CheckLocation(header, copy.dst, "dst"); !status.ok()) return status;
      if (copy.src.kind != NEURON_RTD_LOCATION_DEVICE && copy.dst.kind != NEURON_RTD_LOCATION_DEVICE) {
        return Invalid(header, "a copy must read or write device memory");
      }
      record.command = copy;
      return record;
    }
    case NEURON_RTD_OP_FILL: {
      const auto fill = Load<neuron_rtd_fill_payload>(payload, 0);
      if (fill.reserved0 != 0) return Invalid(header, "fill.reserved0 is not 0");
      if (absl::Status valid = hal::CheckFill(fill.bytes, fill.pattern_bytes); !valid.ok()) {
        return Invalid(header, std::string(valid.message()));
      }
      record.command = fill;
      return record;
    }
    case NEURON_RTD_OP_WAIT:
      record.command = Load<neuron_rtd_wait_payload>(payload, 0);
      return record;
    case NEURON_RTD_OP_MARKER: {
      const auto marker = Load<neuron_rtd_marker_payload>(payload, 0);
      if (marker.kind > NEURON_RTD_MARKER_RANGE_POP || marker.reserved0 != 0) {
        return Invalid(header, absl::StrFormat("marker kind %d is not known", marker.kind));
      }
      record.command = marker;
      return record;
    }
    default:
      return Invalid(header, "opcode has no decoder");
  }
}

}  // namespace neuron::rtd::queue

// Decodes command records copied out of a ring. Pure functions over bytes
// the daemon owns: the fuzz target (tests/fuzz/) drives them directly.
#ifndef NEURON_RTD_DAEMON_QUEUE_RECORD_DECODER_H_
#define NEURON_RTD_DAEMON_QUEUE_RECORD_DECODER_H_

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "neuron/rtd/abi/command_ring.h"

namespace neuron::rtd::queue {

struct SignalCommand {};
struct PadCommand {};
struct LaunchCommand {
  uint64_t executable_id = 0;
  std::vector<uint64_t> arguments;
  std::vector<uint8_t> scalars;
};

// A COLLECTIVE record: a group of operations on one communicator, each
// checked alone (kinds, dtypes, reduce ops, sizes); what depends on the
// communicator (ranks, buffers) is checked when it runs.
struct CollectiveCommand {
  uint64_t communicator_handle = 0;
  std::vector<neuron_rtd_collective_op> ops;
};

struct DecodedRecord {
  neuron_rtd_record_header header{};
  std::variant<PadCommand, neuron_rtd_copy_payload, neuron_rtd_fill_payload,
               neuron_rtd_wait_payload, SignalCommand, LaunchCommand,
               CollectiveCommand, neuron_rtd_marker_payload>
      command;
  std::string op_name;
};

// Checks a record header alone: the framing the ring reader needs before it
// copies the whole record. `available` is how many bytes the producer has
// published past this record's start; `contiguous` how many lie before the
// end of the record area.
absl::Status CheckRecordFraming(const neuron_rtd_record_header& header, uint64_t available,
                                uint64_t contiguous);

// Decodes and validates every field of a whole record (`bytes` holds exactly
// header.length bytes). `last_sequence` is the stream's previous sequence:
// sequences must increase. INVALID_ARGUMENT naming the field otherwise.
absl::StatusOr<DecodedRecord> DecodeRecord(std::span<const uint8_t> bytes, uint64_t last_sequence);

std::string_view OpcodeName(uint16_t opcode);

}  // namespace neuron::rtd::queue

#endif  // NEURON_RTD_DAEMON_QUEUE_RECORD_DECODER_H_

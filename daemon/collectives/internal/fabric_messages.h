// Building and checking the messages of communicator_cross_host.cc and
// communicator_exchange.cc (proto/neuron/rtd/abi/fabric_message.h).
#ifndef NEURON_RTD_DAEMON_COLLECTIVES_INTERNAL_FABRIC_MESSAGES_H_
#define NEURON_RTD_DAEMON_COLLECTIVES_INTERNAL_FABRIC_MESSAGES_H_

#include <cstdint>
#include <span>

#include "neuron/rtd/abi/command_ring.h"
#include "neuron/rtd/abi/fabric_message.h"

namespace neuron::rtd::collectives::internal {

inline constexpr size_t kHeaderBytes = sizeof(neuron_rtd_fabric_header);

inline std::span<const uint8_t> BytesOf(const neuron_rtd_fabric_header& header) {
  return {reinterpret_cast<const uint8_t*>(&header), sizeof(header)};
}

// Describes `op` in the header (what the receiver checks its own against).
inline void Describe(neuron_rtd_fabric_header& header, const neuron_rtd_collective_op& op) {
  header.kind = op.kind;
  header.reduce_op = op.reduce_op;
  header.dtype = op.dtype;
  header.root = op.peer;
  header.element_count = op.element_count;
  header.scale = op.scale;
}

// Whether [offset, offset + bytes) lies within [begin, end), without
// overflowing.
inline bool Within(uint64_t offset, uint64_t bytes, uint64_t begin, uint64_t end) {
  return offset >= begin && offset <= end && bytes <= end - offset;
}

}  // namespace neuron::rtd::collectives::internal

#endif  // NEURON_RTD_DAEMON_COLLECTIVES_INTERNAL_FABRIC_MESSAGES_H_

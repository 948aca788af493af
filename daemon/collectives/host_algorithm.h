// How an all-reduce moves between hosts (the algorithms of
// proto/neuron/rtd/abi/fabric_message.h) and their schedules. Every daemon
// of a communicator must pick alike, so the choice depends only on what
// they agree on: the hosts, the collective and the options (compared at
// HELLO).
//
// Thread-safety: pure functions of plain values.
#ifndef NEURON_RTD_DAEMON_COLLECTIVES_HOST_ALGORITHM_H_
#define NEURON_RTD_DAEMON_COLLECTIVES_HOST_ALGORITHM_H_

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "neuron/rtd/abi/fabric_message.h"

namespace neuron::rtd::collectives {

struct HostAlgorithmOptions {
  // All-reduces of at most this many bytes run by recursive doubling:
  // ceil(log2 H) exchanges of the whole buffer, the fewest steps. Larger ones
  // run by the ring: 2(H-1) steps, each host sending 2(H-1)/H of the buffer,
  // the fewest bytes.
  uint64_t recursive_doubling_max_bytes = 64 << 10;
};

// enum neuron_rtd_fabric_algorithm of an all-reduce of `bytes`.
uint32_t AllReduceAlgorithm(const HostAlgorithmOptions& options, uint64_t bytes);
std::string_view AlgorithmName(uint32_t algorithm);

// Bytes [first, second) of segment `segment` when `element_count` elements
// of `element_bytes` are cut into `hosts` shares (the last ones may be
// short or empty).
std::pair<uint64_t, uint64_t> ShareOf(uint32_t segment, uint32_t hosts, uint64_t element_count,
                                      uint64_t element_bytes);

// The ring: host h sends to h+1 and receives from h-1 (mod H). In
// reduce-scatter step s (0 <= s < H-1) it sends segment h-s and receives
// segment h-s-1, which it reduces into its own and forwards in step s+1;
// after the last step it holds segment h+1 reduced over every host. In
// all-gather step s it sends segment h+1-s and receives segment h-s.
struct RingStep {
  uint32_t send_segment = 0;
  uint32_t receive_segment = 0;
};
RingStep RingReduceScatterStep(uint32_t host, uint32_t hosts, uint32_t step);
RingStep RingAllGatherStep(uint32_t host, uint32_t hosts, uint32_t step);
uint32_t RingReducedSegment(uint32_t host, uint32_t hosts);

// Recursive doubling on the largest power of two P <= H hosts. A host
// h >= P ("extra") sends its buffer to h-P (step 0) and gets the result back
// from it; host h < H-P folds that buffer in first. Then, in step k+1, a
// host below P exchanges its whole buffer with h XOR 2^k.
struct DoublingPlan {
  bool extra = false;
  // The extra host's partner (below P), or the partner's extra host.
  bool has_fold_partner = false;
  uint32_t fold_partner = 0;
  // By exchange: the host of step k+1 (empty for an extra host).
  std::vector<uint32_t> partners;
};
DoublingPlan PlanRecursiveDoubling(uint32_t host, uint32_t hosts);

}  // namespace neuron::rtd::collectives

#endif  // NEURON_RTD_DAEMON_COLLECTIVES_HOST_ALGORITHM_H_

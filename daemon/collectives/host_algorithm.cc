#include "daemon/collectives/host_algorithm.h"

#include <algorithm>

namespace neuron::rtd::collectives {

uint32_t AllReduceAlgorithm(const HostAlgorithmOptions& options, uint64_t bytes) {
  return bytes <= options.recursive_doubling_max_bytes
             ? NEURON_RTD_FABRIC_ALGORITHM_RECURSIVE_DOUBLING
             : NEURON_RTD_FABRIC_ALGORITHM_RING;
}

std::string_view AlgorithmName(uint32_t algorithm) {
  switch (algorithm) {
    case NEURON_RTD_FABRIC_ALGORITHM_DIRECT:
      return "direct exchange";
    case NEURON_RTD_FABRIC_ALGORITHM_RING:
      return "ring";
    case NEURON_RTD_FABRIC_ALGORITHM_RECURSIVE_DOUBLING:
      return "recursive doubling";
    default:
      return "an unknown algorithm";
  }
}

std::pair<uint64_t, uint64_t> ShareOf(uint32_t segment, uint32_t hosts, uint64_t element_count,
                                      uint64_t element_bytes) {
  const uint64_t per_host = (element_count + hosts - 1) / hosts;
  const uint64_t begin = std::min<uint64_t>(uint64_t{segment} * per_host, element_count);
  const uint64_t end = std::min<uint64_t>(begin + per_host, element_count);
  return {begin * element_bytes, end * element_bytes};
}

namespace {

// (host - back) mod hosts, for back <= hosts.
uint32_t Behind(uint32_t host, uint32_t hosts, uint32_t back) {
  return (host + hosts - back % hosts) % hosts;
}

}  // namespace

RingStep RingReduceScatterStep(uint32_t host, uint32_t hosts, uint32_t step) {
  return {.send_segment = Behind(host, hosts, step),
          .receive_segment = Behind(host, hosts, step + 1)};
}

RingStep RingAllGatherStep(uint32_t host, uint32_t hosts, uint32_t step) {
  return {.send_segment = Behind((host + 1) % hosts, hosts, step),
          .receive_segment = Behind(host, hosts, step)};
}

uint32_t RingReducedSegment(uint32_t host, uint32_t hosts) { return (host + 1) % hosts; }

DoublingPlan PlanRecursiveDoubling(uint32_t host, uint32_t hosts) {
  uint32_t power = 1;
  while (power * 2 <= hosts) power *= 2;
  DoublingPlan plan;
  if (host >= power) {
    plan.extra = true;
    plan.has_fold_partner = true;
    plan.fold_partner = host - power;
    return plan;
  }
  if (host + power < hosts) {
    plan.has_fold_partner = true;
    plan.fold_partner = host + power;
  }
  for (uint32_t bit = 1; bit < power; bit *= 2) plan.partners.push_back(host ^ bit);
  return plan;
}

}  // namespace neuron::rtd::collectives

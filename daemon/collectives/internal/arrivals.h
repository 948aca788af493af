// What a collective's step does with the bytes another host sends, as they
// arrive (the `use` of Communicator::Incoming): reduce them into, or copy
// them into, a range of a buffer, refusing bytes outside it.
//
// Thread-safety: the functions returned run on the progress thread; the
// buffer must outlive the claim.
#ifndef NEURON_RTD_DAEMON_COLLECTIVES_INTERNAL_ARRIVALS_H_
#define NEURON_RTD_DAEMON_COLLECTIVES_INTERNAL_ARRIVALS_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <span>

#include "absl/status/status.h"
#include "daemon/collectives/host_reduce.h"
#include "daemon/collectives/internal/fabric_messages.h"

namespace neuron::rtd::collectives::internal {

using ArrivalUse = std::function<absl::Status(uint64_t offset, std::span<const uint8_t> bytes)>;

// Reduces what arrives into `base` + offset, for offsets in [begin, end)
// that are whole elements.
inline ArrivalUse ReduceArrivals(uint8_t* base, uint64_t begin, uint64_t end,
                                 uint64_t element_bytes, hal::ReduceOp reduce,
                                 hal::ElementType type) {
  return [=](uint64_t offset, std::span<const uint8_t> payload) -> absl::Status {
    if (!Within(offset, payload.size(), begin, end) || offset % element_bytes != 0 ||
        payload.size() % element_bytes != 0) {
      return absl::InvalidArgumentError("a host sent bytes outside its share");
    }
    ReduceOnHost(reduce, type, base + offset, payload.data(), payload.size() / element_bytes);
    return absl::OkStatus();
  };
}

// Copies what arrives to `base` + offset, for offsets in [begin, end).
inline ArrivalUse CopyArrivals(uint8_t* base, uint64_t begin, uint64_t end) {
  return [=](uint64_t offset, std::span<const uint8_t> payload) -> absl::Status {
    if (!Within(offset, payload.size(), begin, end)) {
      return absl::InvalidArgumentError("a host sent bytes outside its share");
    }
    if (!payload.empty()) std::memcpy(base + offset, payload.data(), payload.size());
    return absl::OkStatus();
  };
}

}  // namespace neuron::rtd::collectives::internal

#endif  // NEURON_RTD_DAEMON_COLLECTIVES_INTERNAL_ARRIVALS_H_

// The daemon's one clock for timestamps a client sees (profiles):
// CLOCK_MONOTONIC nanoseconds, shared by every process of the host, so a
// client can read the same clock and convert to its wall clock.
#ifndef NEURON_RTD_DAEMON_COMMON_MONOTONIC_CLOCK_H_
#define NEURON_RTD_DAEMON_COMMON_MONOTONIC_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace neuron::rtd {

inline int64_t MonotonicNowNs() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_COMMON_MONOTONIC_CLOCK_H_

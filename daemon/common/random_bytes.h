// Unguessable bytes from the kernel (getrandom), for tokens and handles that
// grant access.
#ifndef NEURON_RTD_DAEMON_COMMON_RANDOM_BYTES_H_
#define NEURON_RTD_DAEMON_COMMON_RANDOM_BYTES_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace neuron::rtd {

// `count` random bytes; the error names `purpose`. Thread-safe.
absl::StatusOr<std::string> RandomBytes(size_t count, const char* purpose);

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_COMMON_RANDOM_BYTES_H_

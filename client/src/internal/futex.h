// Futex waits and wakes on words in memory shared with the daemon.
#ifndef NEURONRT_SRC_INTERNAL_FUTEX_H_
#define NEURONRT_SRC_INTERNAL_FUTEX_H_

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "absl/time/time.h"

namespace neuronrt::internal {

// Sleeps while *word == expected, at most `timeout` (shared, not private:
// the word lives in a mapping the daemon shares).
inline void FutexWait(uint32_t* word, uint32_t expected, absl::Duration timeout) {
  // FUTEX_WAIT refuses a negative timeout (EINVAL) and would spin its caller.
  const timespec relative = absl::ToTimespec(std::max(timeout, absl::ZeroDuration()));
  ::syscall(SYS_futex, word, FUTEX_WAIT, expected, &relative, nullptr, 0);
}

}  // namespace neuronrt::internal

#endif  // NEURONRT_SRC_INTERNAL_FUTEX_H_

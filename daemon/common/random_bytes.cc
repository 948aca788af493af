#include "daemon/common/random_bytes.h"

#include <sys/random.h>

#include <cerrno>

#include "absl/strings/str_cat.h"

namespace neuron::rtd {

absl::StatusOr<std::string> RandomBytes(size_t count, const char* purpose) {
  std::string bytes(count, '\0');
  size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t got = ::getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(errno, absl::StrCat("getrandom for ", purpose));
    }
    filled += static_cast<size_t>(got);
  }
  return bytes;
}

}  // namespace neuron::rtd

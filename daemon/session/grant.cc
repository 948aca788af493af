#include "daemon/session/grant.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace neuron::rtd::session {

Grant::Grant(std::string id, std::vector<uint32_t> cores, uint64_t hbm_quota_bytes,
             std::string label)
    : id_(std::move(id)),
      cores_(std::move(cores)),
      hbm_quota_bytes_(hbm_quota_bytes),
      label_(std::move(label)),
      created_at_(absl::Now()) {}

bool Grant::HasCore(uint32_t core) const {
  return std::binary_search(cores_.begin(), cores_.end(), core);
}

absl::Status Grant::ReserveHbm(uint64_t bytes) {
  uint64_t used = hbm_used_.load(std::memory_order_relaxed);
  do {
    if (hbm_quota_bytes_ != 0 && bytes > hbm_quota_bytes_ - std::min(hbm_quota_bytes_, used)) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "grant %s's HBM quota: requested %d bytes, %d of %d bytes in use by its sessions", id_,
          bytes, used, hbm_quota_bytes_));
    }
  } while (!hbm_used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return absl::OkStatus();
}

void Grant::ReleaseHbm(uint64_t bytes) { hbm_used_.fetch_sub(bytes, std::memory_order_relaxed); }

}  // namespace neuron::rtd::session

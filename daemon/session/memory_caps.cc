#include "daemon/session/memory_caps.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace neuron::rtd::session {

void MemoryCaps::Set(uint32_t core, std::optional<uint64_t> cap_bytes) {
  absl::MutexLock lock(&mutex_);
  cores_[core].cap = cap_bytes;
}

std::optional<uint64_t> MemoryCaps::Get(uint32_t core) const {
  absl::MutexLock lock(&mutex_);
  auto it = cores_.find(core);
  if (it == cores_.end()) return std::nullopt;
  return it->second.cap;
}

absl::Status MemoryCaps::Reserve(uint32_t core, uint64_t bytes) {
  absl::MutexLock lock(&mutex_);
  Core& entry = cores_[core];
  // Compared without adding: `bytes` comes from a client and may be huge.
  if (entry.cap.has_value() && bytes > *entry.cap - std::min(*entry.cap, entry.held)) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "session %d's memory cap on core %d (set_per_process_memory_fraction): requested %d "
        "bytes, %d of %d bytes in use",
        session_id_, core, bytes, entry.held, *entry.cap));
  }
  entry.held += bytes;
  return absl::OkStatus();
}

void MemoryCaps::Release(uint32_t core, uint64_t bytes) {
  absl::MutexLock lock(&mutex_);
  Core& entry = cores_[core];
  entry.held -= std::min(entry.held, bytes);
}

}  // namespace neuron::rtd::session

#include "daemon/exec/executable_cache.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "daemon/exec/executable_decoder.h"
#include "neuron/rtd/content_hash.h"

namespace neuron::rtd::exec {

ExecutableHold::ExecutableHold(ExecutableHold&& other) noexcept
    : cache_(std::exchange(other.cache_, nullptr)),
      executable_(std::move(other.executable_)),
      uid_(other.uid_) {}

ExecutableHold& ExecutableHold::operator=(ExecutableHold&& other) noexcept {
  if (this != &other) {
    Reset();
    cache_ = std::exchange(other.cache_, nullptr);
    executable_ = std::move(other.executable_);
    uid_ = other.uid_;
  }
  return *this;
}

ExecutableHold::~ExecutableHold() { Reset(); }

void ExecutableHold::Reset() {
  if (cache_ != nullptr && executable_ != nullptr) cache_->Release(executable_->id, uid_);
  cache_ = nullptr;
  executable_.reset();
}

absl::StatusOr<ExecutableHold> ExecutableCache::HoldLocked(Entry& entry, uid_t uid) {
  uint32_t& holds = entry.holds_by_user[uid];
  if (holds == 0) {
    const uint64_t of_user = held_bytes_by_user_[uid];
    if (entry.charged_bytes > limits_.max_bytes_per_user - std::min(of_user,
                                                                    limits_.max_bytes_per_user)) {
      if (of_user == 0) held_bytes_by_user_.erase(uid);
      entry.holds_by_user.erase(uid);
      return absl::ResourceExhaustedError(absl::StrFormat(
          "uid %d's sessions hold %d bytes of executables; holding \"%s\" (%d bytes) would pass "
          "[executables] max_bytes_per_user = %d: unload executables or end sessions first",
          uid, of_user, entry.executable->name, entry.charged_bytes,
          limits_.max_bytes_per_user));
    }
    held_bytes_by_user_[uid] = of_user + entry.charged_bytes;
  }
  ++holds;
  if (entry.unheld_position) {
    unheld_.erase(*entry.unheld_position);
    entry.unheld_position.reset();
    held_bytes_ += entry.charged_bytes;
  }
  return ExecutableHold(this, entry.executable, uid);
}

void ExecutableCache::Release(uint64_t id, uid_t uid) {
  absl::MutexLock lock(&mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry& entry = it->second;
  auto holds = entry.holds_by_user.find(uid);
  if (holds == entry.holds_by_user.end()) return;
  if (--holds->second > 0) return;
  entry.holds_by_user.erase(holds);
  if ((held_bytes_by_user_[uid] -= entry.charged_bytes) == 0) held_bytes_by_user_.erase(uid);
  if (entry.holds_by_user.empty()) {
    held_bytes_ -= entry.charged_bytes;
    entry.unheld_position = unheld_.insert(unheld_.end(), id);
  }
}

absl::StatusOr<std::optional<ExecutableHold>> ExecutableCache::LookupAndHold(
    std::string_view content_hash, uid_t uid) {
  absl::MutexLock lock(&mutex_);
  auto id = id_by_hash_.find(content_hash);
  if (id == id_by_hash_.end()) {
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  absl::StatusOr<ExecutableHold> hold = HoldLocked(entries_.at(id->second), uid);
  if (!hold.ok()) return hold.status();
  return std::optional<ExecutableHold>(*std::move(hold));
}

void ExecutableCache::EvictLocked(std::map<uint64_t, Entry>::iterator entry) {
  unheld_.erase(*entry->second.unheld_position);
  memory_bytes_ -= entry->second.charged_bytes;
  id_by_hash_.erase(entry->second.executable->content_hash);
  entries_.erase(entry);
  ++evictions_;
}

absl::Status ExecutableCache::MakeRoomLocked(uint64_t bytes) {
  while (memory_bytes_ + bytes > limits_.max_bytes && !unheld_.empty()) {
    EvictLocked(entries_.find(unheld_.front()));
  }
  if (memory_bytes_ + bytes <= limits_.max_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrFormat(
      "the executable cache is full: live sessions hold %d bytes of executables and a %d-byte "
      "one does not fit in [executables] max_cache_bytes = %d",
      held_bytes_, bytes, limits_.max_bytes));
}

absl::StatusOr<LoadResult> ExecutableCache::Load(std::string_view content_hash,
                                                 std::string_view name, std::string_view body,
                                                 ExecutableBodyKind kind, uid_t uid) {
  const std::string actual = ContentHash(body);
  if (actual != content_hash) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "executable content hash %s does not match its %d-byte body (hash %s)", content_hash,
        body.size(), actual));
  }
  absl::StatusOr<std::optional<ExecutableHold>> cached = LookupAndHold(content_hash, uid);
  if (!cached.ok()) return cached.status();
  if (*cached) return LoadResult{.hold = std::move(**cached), .cache_hit = true};

  absl::StatusOr<Executable> decoded = DecodeExecutable(body, kind);
  if (!decoded.ok()) return decoded.status();
  decoded->content_hash = actual;
  decoded->name = std::string(name.substr(0, 256));
  decoded->size_bytes = body.size();
  absl::StatusOr<std::unique_ptr<hal::Executable>> prepared =
      backend_.PrepareExecutable(decoded->spec);
  if (!prepared.ok()) {
    return absl::Status(prepared.status().code(),
                        absl::StrFormat("executable \"%s\": %s", decoded->name,
                                        prepared.status().message()));
  }
  if (const auto* neff = dynamic_cast<const hal::NeffExecutable*>(prepared->get())) {
    SetNeffLaunchTensors(neff->tensors(), *decoded);
  }
  decoded->prepared = *std::move(prepared);

  absl::MutexLock lock(&mutex_);
  if (auto id = id_by_hash_.find(actual); id != id_by_hash_.end()) {
    absl::StatusOr<ExecutableHold> hold = HoldLocked(entries_.at(id->second), uid);
    if (!hold.ok()) return hold.status();
    return LoadResult{.hold = *std::move(hold), .cache_hit = true};
  }
  const uint64_t charged = body.size() + kExecutableOverheadBytes;
  const uint64_t of_user = held_bytes_by_user_.contains(uid) ? held_bytes_by_user_[uid] : 0;
  if (charged > limits_.max_bytes_per_user - std::min(of_user, limits_.max_bytes_per_user)) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "uid %d's sessions hold %d bytes of executables; loading \"%s\" (%d bytes) would pass "
        "[executables] max_bytes_per_user = %d: unload executables or end sessions first",
        uid, of_user, decoded->name, charged, limits_.max_bytes_per_user));
  }
  if (absl::Status room = MakeRoomLocked(charged); !room.ok()) return room;
  decoded->id = next_id_++;
  auto executable = std::make_shared<const Executable>(*std::move(decoded));
  id_by_hash_.emplace(actual, executable->id);
  Entry& entry = entries_[executable->id];
  entry.executable = executable;
  entry.charged_bytes = charged;
  entry.unheld_position = unheld_.insert(unheld_.end(), executable->id);
  memory_bytes_ += charged;
  absl::StatusOr<ExecutableHold> hold = HoldLocked(entry, uid);
  if (!hold.ok()) return hold.status();
  return LoadResult{.hold = *std::move(hold), .cache_hit = false};
}

uint64_t ExecutableCache::EvictUnheld() {
  absl::MutexLock lock(&mutex_);
  uint64_t evicted = 0;
  while (!unheld_.empty()) {
    EvictLocked(entries_.find(unheld_.front()));
    ++evicted;
  }
  return evicted;
}

CacheStats ExecutableCache::stats() const {
  absl::MutexLock lock(&mutex_);
  return CacheStats{.entries = entries_.size(),
                    .memory_bytes = memory_bytes_,
                    .held_entries = entries_.size() - unheld_.size(),
                    .held_bytes = held_bytes_,
                    .hits = hits_,
                    .misses = misses_,
                    .evictions = evictions_,
                    .limits = limits_};
}

std::vector<ExecutableCache::Listing> ExecutableCache::List() const {
  absl::MutexLock lock(&mutex_);
  std::vector<Listing> listing;
  listing.reserve(entries_.size());
  for (const auto& [id, entry] : entries_) {
    listing.push_back(Listing{.executable = entry.executable,
                              .charged_bytes = entry.charged_bytes,
                              .holders = static_cast<uint32_t>(entry.holds_by_user.size())});
  }
  return listing;
}

uint64_t ExecutableCache::held_bytes_of_user(uid_t uid) const {
  absl::MutexLock lock(&mutex_);
  auto it = held_bytes_by_user_.find(uid);
  return it == held_bytes_by_user_.end() ? 0 : it->second;
}

}  // namespace neuron::rtd::exec

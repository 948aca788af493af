#include "daemon/compiler/artifact_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "daemon/common/host_name.h"
#include "neuron/rtd/content_hash.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace neuron::rtd::compiler {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTemporaryPrefix = ".tmp.";
constexpr size_t kPackageHashDigits = 16;

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::stringstream content;
  content << file.rdbuf();
  return content.str();
}

// Records are files on disk another daemon wrote, or a damaged one: every
// field is checked for its type.
std::string StringField(const nlohmann::json& object, const char* name) {
  if (!object.is_object()) return "";
  const auto found = object.find(name);
  return found != object.end() && found->is_string() ? found->get<std::string>() : "";
}

uint64_t CountField(const nlohmann::json& object, const char* name) {
  if (!object.is_object()) return 0;
  const auto found = object.find(name);
  // Not a double converted: 1e30 does not fit.
  return found != object.end() && found->is_number_unsigned() ? found->get<uint64_t>() : 0;
}

double SecondsField(const nlohmann::json& object, const char* name) {
  if (!object.is_object()) return 0;
  const auto found = object.find(name);
  return found != object.end() && found->is_number() ? found->get<double>() : 0;
}

// The package a record of `key` names: KEY.HASH.pt2, nothing else (a
// damaged record must not name a file elsewhere).
std::optional<std::string> PackageNamed(const nlohmann::json& record, const std::string& key) {
  const std::string name = StringField(record, "package");
  const std::string prefix = key + ".";
  if (!name.starts_with(prefix) || !name.ends_with(".pt2") ||
      name.size() != prefix.size() + kPackageHashDigits + 4) {
    return std::nullopt;
  }
  const std::string_view hash(name.data() + prefix.size(), kPackageHashDigits);
  if (hash.find_first_not_of("0123456789abcdef") != std::string_view::npos) return std::nullopt;
  return name;
}

// Every record in `directory` (KEY.json), by key, parsed (a damaged one is
// not an object).
std::vector<std::pair<std::string, nlohmann::json>> Records(const std::string& directory) {
  std::vector<std::pair<std::string, nlohmann::json>> records;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
    const std::string file = entry.path().filename();
    if (entry.path().extension() != ".json" || file.starts_with(".")) continue;
    const std::optional<std::string> text = ReadFile(entry.path());
    if (!text) continue;
    records.emplace_back(entry.path().stem(), nlohmann::json::parse(*text, nullptr, false));
  }
  return records;
}

// This daemon among the writers of a shared directory: host and pid.
std::string WriterName() { return absl::StrFormat("%s-%d", FileNameSafeHostName(), ::getpid()); }

bool OlderThan(const fs::directory_entry& entry, absl::Duration age) {
  std::error_code error;
  const fs::file_time_type written = entry.last_write_time(error);
  if (error) return false;
  return fs::file_time_type::clock::now() - written >= absl::ToChronoNanoseconds(age);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ArtifactCache>> ArtifactCache::Open(ArtifactCacheOptions options,
                                                                   OsSysCalls& sys_calls) {
  if (options.directory.empty()) {
    return absl::InvalidArgumentError("the compiled-graph cache needs a directory");
  }
  if (SysCallInt made = sys_calls.Mkdir(options.directory, 0700);
      !made.ok() && made.error != EEXIST) {
    return absl::ErrnoToStatus(made.error,
                               absl::StrFormat("creating the compiled-graph cache %s",
                                               options.directory));
  }
  struct stat status{};
  if (SysCallInt seen = sys_calls.Lstat(options.directory, &status); !seen.ok()) {
    return absl::ErrnoToStatus(seen.error, absl::StrFormat("checking %s", options.directory));
  }
  if (!S_ISDIR(status.st_mode)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the compiled-graph cache %s is not a directory (a symlink?)", options.directory));
  }
  if (status.st_uid != ::geteuid() || (status.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the compiled-graph cache %s must be owned by uid %d and writable by it alone (it is "
        "uid %d, mode %o): neuron-rtd loads native code from it",
        options.directory, ::geteuid(), status.st_uid, status.st_mode & 07777));
  }
  return std::unique_ptr<ArtifactCache>(
      new ArtifactCache(std::move(options), WriterName(), sys_calls));
}

std::string ArtifactCache::TemporaryName(const std::string& stem) const {
  static std::atomic<uint64_t> temporaries{0};
  return absl::StrFormat("%s%s.%s.%d", kTemporaryPrefix, stem, writer_,
                         temporaries.fetch_add(1, std::memory_order_relaxed));
}

std::optional<std::string> ArtifactCache::Find(const std::string& key) {
  absl::MutexLock lock(&mutex_);
  const std::string record_path = options_.directory + "/" + key + ".json";
  const std::optional<std::string> record_text = ReadFile(record_path);
  if (!record_text) return std::nullopt;
  const nlohmann::json record = nlohmann::json::parse(*record_text, nullptr, false);
  const std::optional<std::string> name = PackageNamed(record, key);
  const std::string package = name ? options_.directory + "/" + *name : "";
  const std::optional<std::string> content = name ? ReadFile(package) : std::nullopt;
  if (!content || ContentHash(*content) != StringField(record, "hash")) {
    // Another daemon may have stored this key again since the record was
    // read: only a record that is still the one read is removed.
    if (ReadFile(record_path) == record_text) {
      spdlog::warn("compiled graph {} in {} is damaged; it is removed and will be compiled again",
                   key, options_.directory);
      RemoveLocked(key);
    }
    return std::nullopt;
  }
  // The record's modification time is the package's last use.
  ::utimensat(AT_FDCWD, record_path.c_str(), nullptr, 0);
  return package;
}

absl::StatusOr<std::string> ArtifactCache::Store(const CompileKey& key,
                                                 const std::string& package,
                                                 const std::string& graph_name,
                                                 double compile_seconds) {
  absl::MutexLock lock(&mutex_);
  const std::string digest = key.Digest();
  const std::string incoming = options_.directory + "/" + TemporaryName(digest + ".pt2");
  std::error_code error;
  fs::rename(package, incoming, error);
  if (error) {
    // Another file system: copied, then the original removed.
    fs::copy_file(package, incoming, fs::copy_options::overwrite_existing, error);
    if (error) {
      fs::remove(incoming, error);
      return absl::InternalError(absl::StrFormat("storing %s in %s: %s", package,
                                                 options_.directory, error.message()));
    }
    fs::remove(package, error);
  }
  const std::optional<std::string> content = ReadFile(incoming);
  if (!content) {
    fs::remove(incoming, error);
    return absl::InternalError(absl::StrFormat("cannot read back %s", incoming));
  }
  const std::string hash = ContentHash(*content);
  const std::string name = absl::StrCat(digest, ".", hash.substr(0, kPackageHashDigits), ".pt2");
  const std::string stored = options_.directory + "/" + name;
  fs::rename(incoming, stored, error);
  if (error) {
    fs::remove(incoming, error);
    return absl::InternalError(absl::StrFormat("cannot publish %s: %s", stored, error.message()));
  }
  const nlohmann::json record{{"package", name},
                              {"hash", hash},
                              {"bytes", content->size()},
                              {"graph", graph_name},
                              {"compile_seconds", compile_seconds},
                              {"key",
                               {{"graph", key.graph},
                                {"torch", key.torch_version},
                                {"flags", key.compiler_flags},
                                {"cpu", key.cpu}}}};
  const std::string record_path = options_.directory + "/" + digest + ".json";
  const std::string temporary = options_.directory + "/" + TemporaryName(digest + ".json");
  {
    std::ofstream file(temporary, std::ios::trunc);
    file << record.dump();
    if (!file) {
      fs::remove(temporary, error);
      return absl::InternalError(absl::StrFormat("cannot write %s", temporary));
    }
  }
  fs::rename(temporary, record_path, error);
  if (error) {
    fs::remove(temporary, error);
    return absl::InternalError(absl::StrFormat("cannot write %s", record_path));
  }
  EvictLocked(digest);
  return stored;
}

std::vector<StoredArtifact> ArtifactCache::ListLocked() const {
  std::vector<StoredArtifact> artifacts;
  for (const auto& [key, record] : Records(options_.directory)) {
    if (!record.is_object()) continue;
    const nlohmann::json parts = record.contains("key") ? record["key"] : nlohmann::json();
    artifacts.push_back(StoredArtifact{
        .key = key,
        .parts = CompileKey{.graph = StringField(parts, "graph"),
                            .torch_version = StringField(parts, "torch"),
                            .compiler_flags = StringField(parts, "flags"),
                            .cpu = StringField(parts, "cpu")},
        .graph_name = StringField(record, "graph"),
        .bytes = CountField(record, "bytes"),
        .compile_seconds = SecondsField(record, "compile_seconds")});
  }
  return artifacts;
}

std::vector<StoredArtifact> ArtifactCache::List() const {
  absl::MutexLock lock(&mutex_);
  return ListLocked();
}

uint64_t ArtifactCache::bytes() const {
  uint64_t total = 0;
  for (const StoredArtifact& artifact : List()) total += artifact.bytes;
  return total;
}

void ArtifactCache::RemoveLocked(const std::string& key) {
  const std::string record_path = options_.directory + "/" + key + ".json";
  std::error_code error;
  if (const std::optional<std::string> text = ReadFile(record_path)) {
    const nlohmann::json record = nlohmann::json::parse(*text, nullptr, false);
    if (const std::optional<std::string> name = PackageNamed(record, key)) {
      fs::remove(options_.directory + "/" + *name, error);
    }
  }
  fs::remove(record_path, error);
}

void ArtifactCache::RemoveOrphansLocked(absl::Duration min_age) {
  std::set<std::string> named;
  for (const auto& [key, record] : Records(options_.directory)) {
    if (std::optional<std::string> name = PackageNamed(record, key)) named.insert(*std::move(name));
  }
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(options_.directory, error)) {
    if (!entry.is_regular_file(error)) continue;
    const std::string file = entry.path().filename();
    const bool orphan = file.starts_with(kTemporaryPrefix) ||
                        (entry.path().extension() == ".pt2" && !named.contains(file));
    if (orphan && OlderThan(entry, min_age)) fs::remove(entry.path(), error);
  }
}

void ArtifactCache::EvictLocked(const std::string& keep) {
  RemoveOrphansLocked(options_.orphan_age);
  std::vector<StoredArtifact> artifacts = ListLocked();
  uint64_t total = 0;
  for (const StoredArtifact& artifact : artifacts) total += artifact.bytes;
  if (total <= options_.max_bytes) return;
  auto last_use = [&](const StoredArtifact& artifact) {
    std::error_code error;
    return fs::last_write_time(options_.directory + "/" + artifact.key + ".json", error);
  };
  std::sort(artifacts.begin(), artifacts.end(),
            [&](const auto& a, const auto& b) { return last_use(a) < last_use(b); });
  for (const StoredArtifact& artifact : artifacts) {
    if (total <= options_.max_bytes) break;
    if (artifact.key == keep) continue;
    RemoveLocked(artifact.key);
    total -= artifact.bytes;
  }
}

uint64_t ArtifactCache::Clear() {
  absl::MutexLock lock(&mutex_);
  const std::vector<StoredArtifact> artifacts = ListLocked();
  for (const StoredArtifact& artifact : artifacts) RemoveLocked(artifact.key);
  RemoveOrphansLocked(absl::ZeroDuration());
  return artifacts.size();
}

}  // namespace neuron::rtd::compiler

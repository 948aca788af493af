#include "daemon/compiler/artifact_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "neuron/rtd/content_hash.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace neuron::rtd::compiler {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::stringstream content;
  content << file.rdbuf();
  return content.str();
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
  return std::unique_ptr<ArtifactCache>(new ArtifactCache(std::move(options), sys_calls));
}

std::optional<std::string> ArtifactCache::Find(const std::string& key) {
  absl::MutexLock lock(&mutex_);
  const std::string package = options_.directory + "/" + key + ".pt2";
  const std::string record_path = options_.directory + "/" + key + ".json";
  const std::optional<std::string> record_text = ReadFile(record_path);
  if (!record_text) return std::nullopt;
  const nlohmann::json record = nlohmann::json::parse(*record_text, nullptr, false);
  const std::optional<std::string> content = ReadFile(package);
  if (!record.is_object() || !content || ContentHash(*content) != record.value("hash", "")) {
    spdlog::warn("compiled graph {} in {} is damaged; it is removed and will be compiled again",
                 key, options_.directory);
    RemoveLocked(key);
    return std::nullopt;
  }
  // The record's modification time is the package's last use.
  ::utimensat(AT_FDCWD, record_path.c_str(), nullptr, 0);
  return package;
}

absl::StatusOr<std::string> ArtifactCache::Store(const std::string& key,
                                                 const std::string& package,
                                                 const std::string& graph_name,
                                                 double compile_seconds) {
  absl::MutexLock lock(&mutex_);
  const std::string stored = options_.directory + "/" + key + ".pt2";
  std::error_code error;
  fs::rename(package, stored, error);
  if (error) {
    // Another file system: copied, then the original removed.
    fs::copy_file(package, stored, fs::copy_options::overwrite_existing, error);
    if (error) {
      return absl::InternalError(absl::StrFormat("storing %s in %s: %s", package,
                                                 options_.directory, error.message()));
    }
    fs::remove(package, error);
  }
  const std::optional<std::string> content = ReadFile(stored);
  if (!content) return absl::InternalError(absl::StrFormat("cannot read back %s", stored));
  const nlohmann::json record{{"hash", ContentHash(*content)},
                              {"bytes", content->size()},
                              {"graph", graph_name},
                              {"compile_seconds", compile_seconds}};
  const std::string record_path = options_.directory + "/" + key + ".json";
  const std::string temporary = record_path + ".tmp";
  {
    std::ofstream file(temporary, std::ios::trunc);
    file << record.dump();
    if (!file) return absl::InternalError(absl::StrFormat("cannot write %s", temporary));
  }
  fs::rename(temporary, record_path, error);
  if (error) return absl::InternalError(absl::StrFormat("cannot write %s", record_path));
  EvictLocked(key);
  return stored;
}

std::vector<StoredArtifact> ArtifactCache::ListLocked() const {
  std::vector<StoredArtifact> artifacts;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(options_.directory, error)) {
    if (entry.path().extension() != ".json") continue;
    const std::optional<std::string> text = ReadFile(entry.path());
    if (!text) continue;
    const nlohmann::json record = nlohmann::json::parse(*text, nullptr, false);
    if (!record.is_object()) continue;
    artifacts.push_back(StoredArtifact{.key = entry.path().stem(),
                                       .graph_name = record.value("graph", ""),
                                       .bytes = record.value("bytes", uint64_t{0}),
                                       .compile_seconds = record.value("compile_seconds", 0.0)});
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
  std::error_code error;
  fs::remove(options_.directory + "/" + key + ".json", error);
  fs::remove(options_.directory + "/" + key + ".pt2", error);
}

void ArtifactCache::EvictLocked(const std::string& keep) {
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
  return artifacts.size();
}

}  // namespace neuron::rtd::compiler

#include "daemon/server/grant_registry.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"

namespace neuron::rtd {
namespace {

constexpr size_t kMaxIdBytes = 63;
constexpr size_t kMaxLabelBytes = 256;

// A directory name, and a Kubernetes-style name: [a-z0-9.-], starting with
// a letter or digit (so never "." or "..").
bool ValidId(const std::string& id) {
  if (id.empty() || id.size() > kMaxIdBytes) return false;
  auto allowed = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!allowed(id[0])) return false;
  return std::all_of(id.begin(), id.end(),
                     [&](char c) { return allowed(c) || c == '.' || c == '-'; });
}

// The parent exists (made 0755 if not) and the grant's directory is a real
// directory, not a link someone left there.
absl::Status MakeDirectory(const std::string& path, OsSysCalls& sys_calls) {
  SysCallInt made = sys_calls.Mkdir(path, 0755);
  if (!made.ok() && made.error != EEXIST) {
    return absl::InternalError(
        absl::StrFormat("cannot create %s: %s", path, std::strerror(made.error)));
  }
  struct stat info {};
  if (!sys_calls.Lstat(path, &info).ok() || !S_ISDIR(info.st_mode)) {
    return absl::FailedPreconditionError(absl::StrFormat("%s is not a directory", path));
  }
  // Pods run as any uid: the mount of the directory is the capability, so
  // it is open to all, as its sockets are.
  sys_calls.Chmod(path, 0755);
  return absl::OkStatus();
}

}  // namespace

GrantRegistry::GrantRegistry(GrantRegistryOptions options, OsSysCalls& sys_calls,
                             UnixSocketListener::ConnectionCallback on_grpc_connection,
                             UnixSocketListener::ConnectionCallback on_data_connection)
    : options_(std::move(options)),
      sys_calls_(sys_calls),
      on_grpc_connection_(std::move(on_grpc_connection)),
      on_data_connection_(std::move(on_data_connection)) {}

GrantRegistry::~GrantRegistry() { DeleteAll(); }

void GrantRegistry::DeleteAll() {
  std::map<std::string, Entry> grants;
  {
    absl::MutexLock lock(&mutex_);
    grants.swap(grants_);
  }
  for (auto& [id, entry] : grants) {
    entry.grant->Revoke();
    entry.grpc.reset();
    entry.data.reset();
    RemoveDirectory(id);
  }
}

std::string GrantRegistry::DirectoryOf(const std::string& id) const {
  return options_.directory + "/" + id;
}

void GrantRegistry::RemoveDirectory(const std::string& id) const {
  std::error_code error;
  std::filesystem::remove_all(DirectoryOf(id), error);
  if (error) {
    spdlog::warn("cannot remove grant directory {}: {}", DirectoryOf(id), error.message());
  }
}

absl::StatusOr<GrantRegistry::Created> GrantRegistry::Create(const std::string& id,
                                                             std::vector<uint32_t> cores,
                                                             uint64_t hbm_quota_bytes,
                                                             std::string label) {
  if (!ValidId(id)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "grant id \"%s\" is not 1 to %d of [a-z0-9.-] starting with a letter or digit",
        absl::CHexEscape(id.substr(0, 80)), kMaxIdBytes));
  }
  if (cores.empty()) return absl::InvalidArgumentError("a grant needs at least one core");
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  if (cores.back() >= options_.host_cores) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "core %d does not exist: this host has cores 0-%d", cores.back(), options_.host_cores - 1));
  }
  if (label.size() > kMaxLabelBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a grant's label is at most %d bytes", kMaxLabelBytes));
  }
  absl::MutexLock lock(&mutex_);
  if (auto found = grants_.find(id); found != grants_.end()) {
    const session::Grant& existing = *found->second.grant;
    if (existing.cores() == cores && existing.hbm_quota_bytes() == hbm_quota_bytes) {
      return Created{.grant = {found->second.grant, DirectoryOf(id)}, .created = false};
    }
    return absl::AlreadyExistsError(absl::StrFormat(
        "grant %s exists with cores %s and an HBM quota of %d bytes; delete it first", id,
        absl::StrJoin(existing.cores(), ","), existing.hbm_quota_bytes()));
  }
  if (grants_.size() >= options_.max_grants) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "neuron-rtd already has %d grants, its limit ([server] max_grants)", grants_.size()));
  }
  // The parent is made by the first grant (the daemon's runtime directory
  // may have been emptied since it started).
  if (absl::Status made = MakeDirectory(options_.directory, sys_calls_); !made.ok()) return made;
  const std::string directory = DirectoryOf(id);
  if (absl::Status made = MakeDirectory(directory, sys_calls_); !made.ok()) return made;
  ListenerOptions grpc_options{.path = directory + "/" + kGrantSocketName,
                               .mode = 0666,
                               .directory_mode = 0755};
  ListenerOptions data_options = grpc_options;
  data_options.path += ".data";
  data_options.socket_type = SOCK_SEQPACKET;
  absl::StatusOr<std::unique_ptr<UnixSocketListener>> grpc =
      UnixSocketListener::Create(grpc_options, sys_calls_);
  if (!grpc.ok()) {
    RemoveDirectory(id);
    return grpc.status();
  }
  absl::StatusOr<std::unique_ptr<UnixSocketListener>> data =
      UnixSocketListener::Create(data_options, sys_calls_);
  if (!data.ok()) {
    grpc->reset();
    RemoveDirectory(id);
    return data.status();
  }
  auto grant =
      std::make_shared<session::Grant>(id, std::move(cores), hbm_quota_bytes, std::move(label));
  auto tagged = [id](const UnixSocketListener::ConnectionCallback& callback) {
    return [id, &callback](int fd, const PeerCredentials& peer) {
      PeerCredentials through_grant = peer;
      through_grant.grant = id;
      callback(fd, through_grant);
    };
  };
  (*grpc)->Start(tagged(on_grpc_connection_));
  (*data)->Start(tagged(on_data_connection_));
  grants_.emplace(id, Entry{.grant = grant, .grpc = *std::move(grpc), .data = *std::move(data)});
  spdlog::info("grant {} created: cores {}, HBM quota {} bytes, in {}", id,
               absl::StrJoin(grant->cores(), ","), hbm_quota_bytes, directory);
  return Created{.grant = {std::move(grant), directory}, .created = true};
}

absl::Status GrantRegistry::Delete(const std::string& id) {
  Entry entry;
  {
    absl::MutexLock lock(&mutex_);
    auto found = grants_.find(id);
    if (found == grants_.end()) {
      return absl::NotFoundError(
          absl::StrFormat("no grant %s", absl::CHexEscape(id.substr(0, 80))));
    }
    entry = std::move(found->second);
    grants_.erase(found);
  }
  entry.grant->Revoke();
  entry.grpc.reset();
  entry.data.reset();
  RemoveDirectory(id);
  spdlog::info("grant {} deleted", id);
  return absl::OkStatus();
}

std::shared_ptr<session::Grant> GrantRegistry::Find(const std::string& id) const {
  absl::MutexLock lock(&mutex_);
  auto found = grants_.find(id);
  return found == grants_.end() ? nullptr : found->second.grant;
}

absl::StatusOr<std::shared_ptr<session::Grant>> GrantRegistry::OfPeer(
    const PeerCredentials& peer) const {
  if (peer.grant.empty()) return nullptr;
  std::shared_ptr<session::Grant> grant = Find(peer.grant);
  if (grant == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrFormat("grant %s was deleted: its sockets no longer serve", peer.grant));
  }
  return grant;
}

std::vector<GrantRegistry::Listed> GrantRegistry::List() const {
  absl::MutexLock lock(&mutex_);
  std::vector<Listed> listed;
  for (const auto& [id, entry] : grants_) listed.push_back({entry.grant, DirectoryOf(id)});
  return listed;
}

}  // namespace neuron::rtd

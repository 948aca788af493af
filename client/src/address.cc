#include "neuronrt/address.h"

#include <sys/stat.h>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "absl/strings/str_format.h"
#include "neuron/rtd/socket_paths.h"

namespace neuronrt {
namespace {

bool SocketExists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode);
}

absl::StatusOr<DaemonAddress> Parse(std::string_view address, std::string origin) {
  constexpr std::string_view kScheme = neuron::rtd::kUnixAddressScheme;
  if (!address.starts_with(kScheme) || address.size() == kScheme.size() ||
      address[kScheme.size()] != '/') {
    return absl::InvalidArgumentError(absl::StrFormat(
        "neuron-rtd address \"%s\" (from %s) must have the form unix:/absolute/path", address,
        origin));
  }
  return DaemonAddress{.target = std::string(address),
                       .socket_path = std::string(address.substr(kScheme.size())),
                       .origin = std::move(origin)};
}

DaemonAddress FromPath(const std::string& path, std::string origin) {
  return DaemonAddress{.target = absl::StrFormat("%s%s", neuron::rtd::kUnixAddressScheme, path),
                       .socket_path = path,
                       .origin = std::move(origin)};
}

}  // namespace

absl::Status CheckPrivateDirectory(const std::string& directory) {
  struct stat info {};
  if (::lstat(directory.c_str(), &info) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrFormat("checking %s", directory));
  }
  const uid_t user = ::getuid();
  if (!S_ISDIR(info.st_mode) || info.st_uid != user || (info.st_mode & 077) != 0) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "refusing the neuron-rtd socket directory %s: it must be a directory owned by you (uid "
        "%d) with mode 0700, and it is %s owned by uid %d with mode %04o. Another user may have "
        "created it to receive your tensors: remove it, or set XDG_RUNTIME_DIR or "
        "NEURON_RTD_ADDRESS",
        directory, user, S_ISLNK(info.st_mode) ? "a symlink" : S_ISDIR(info.st_mode) ? "a directory" : "a file",
        info.st_uid, info.st_mode & 07777));
  }
  return absl::OkStatus();
}

absl::StatusOr<DaemonAddress> ResolveDaemonAddress(std::string_view explicit_address) {
  if (!explicit_address.empty()) return Parse(explicit_address, "--address");
  const std::string env_var(neuron::rtd::kAddressEnvVar);
  if (const char* from_env = std::getenv(env_var.c_str()); from_env != nullptr && *from_env) {
    return Parse(from_env, env_var);
  }
  const std::string per_user = neuron::rtd::PerUserSocketPath();
  if (SocketExists(per_user)) return FromPath(per_user, "per-user socket");
  const std::string system(neuron::rtd::kSystemSocketPath);
  if (SocketExists(system)) return FromPath(system, "system socket");
  return FromPath(per_user, "per-user socket");
}

}  // namespace neuronrt

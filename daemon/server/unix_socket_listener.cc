#include "daemon/server/unix_socket_listener.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "spdlog/spdlog.h"

namespace neuron::rtd {
namespace {

constexpr int kListenBacklog = 128;
// After EMFILE/ENFILE the listening socket stays readable; wait this long
// before accepting again instead of spinning.
constexpr auto kAcceptBackoff = std::chrono::milliseconds(50);

absl::Status Failed(int error, std::string_view what, std::string_view path) {
  return absl::ErrnoToStatus(error, absl::StrFormat("%s %s", what, path));
}

absl::StatusOr<sockaddr_un> MakeAddress(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("socket path ", path, " is ", path.size(),
                                                   " bytes long; the limit is ",
                                                   sizeof(address.sun_path) - 1));
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  return address;
}

std::string ParentDirectory(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::Status EnsureDirectory(const std::string& directory, mode_t mode, bool require_private,
                             OsSysCalls& sys_calls) {
  // A private directory must be the directory itself, never a symlink that
  // someone else could point elsewhere; any other may be reached through one.
  auto inspect = [&](struct stat* info) {
    return require_private ? sys_calls.Lstat(directory, info) : sys_calls.Stat(directory, info);
  };
  struct stat info {};
  SysCallInt found = inspect(&info);
  if (!found.ok() && found.error == ENOENT) {
    SysCallInt made = sys_calls.Mkdir(directory, mode);
    if (!made.ok() && made.error != EEXIST) {
      return Failed(made.error, "cannot create socket directory", directory);
    }
    found = inspect(&info);
  }
  if (!found.ok()) return Failed(found.error, "cannot inspect socket directory", directory);
  if (!S_ISDIR(info.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("socket directory ", directory, " is not a directory"));
  }
  if (require_private && (info.st_uid != ::geteuid() || (info.st_mode & 077) != 0)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "socket directory %s must be owned by uid %d with mode 0700 (it has uid %d, mode %04o)",
        directory, ::geteuid(), info.st_uid, info.st_mode & 07777));
  }
  return absl::OkStatus();
}

std::string ReadLockOwner(int lock_fd) {
  char buffer[32] = {};
  const ssize_t read_bytes = ::pread(lock_fd, buffer, sizeof(buffer) - 1, 0);
  int pid = 0;
  if (read_bytes > 0 && absl::SimpleAtoi(absl::string_view(buffer, read_bytes), &pid)) {
    return absl::StrCat(" (pid ", pid, ")");
  }
  return "";
}

// Returns the locked descriptor of PATH.lock, with this process's pid in it.
absl::StatusOr<int> LockSocketPath(const std::string& path, OsSysCalls& sys_calls) {
  const std::string lock_path = path + ".lock";
  SysCallInt lock_fd =
      sys_calls.Open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (!lock_fd.ok()) return Failed(lock_fd.error, "cannot open lock file", lock_path);
  SysCallInt locked = sys_calls.Flock(lock_fd.value, LOCK_EX | LOCK_NB);
  if (!locked.ok()) {
    const std::string owner = ReadLockOwner(lock_fd.value);
    sys_calls.Close(lock_fd.value);
    if (locked.error == EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat("another neuron-rtd", owner, " is already serving unix:", path,
                       "; stop it first, or give this one another --socket"));
    }
    return Failed(locked.error, "cannot lock", lock_path);
  }
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(lock_fd.value, 0) != 0 ||
      ::pwrite(lock_fd.value, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    spdlog::warn("cannot record the daemon's pid in {}: {}", lock_path, std::strerror(errno));
  }
  return lock_fd.value;
}

// With the path locked, any socket file there belongs to a daemon that died
// without removing it (or to one that predates the lock). A connect tells
// which.
absl::Status RemoveStaleSocket(const std::string& path, const sockaddr_un& address,
                               int socket_type, OsSysCalls& sys_calls) {
  struct stat info {};
  SysCallInt found = sys_calls.Lstat(path, &info);
  if (!found.ok()) {
    if (found.error == ENOENT) return absl::OkStatus();
    return Failed(found.error, "cannot inspect", path);
  }
  if (!S_ISSOCK(info.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " exists and is not a socket; refusing to replace it"));
  }
  SysCallInt probe = sys_calls.Socket(AF_UNIX, socket_type | SOCK_CLOEXEC, 0);
  if (!probe.ok()) return Failed(probe.error, "cannot create a socket to probe", path);
  SysCallInt connected =
      sys_calls.Connect(probe.value, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  sys_calls.Close(probe.value);
  if (connected.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("another process is already serving unix:", path,
                     "; stop it first, or give this daemon another --socket"));
  }
  SysCallInt removed = sys_calls.Unlink(path);
  if (!removed.ok() && removed.error != ENOENT) {
    return Failed(removed.error, "cannot remove stale socket", path);
  }
  spdlog::info("removed stale socket {} left by a daemon that is no longer running", path);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<UnixSocketListener>> UnixSocketListener::Create(
    const ListenerOptions& options, OsSysCalls& sys_calls) {
  absl::StatusOr<sockaddr_un> address = MakeAddress(options.path);
  if (!address.ok()) return address.status();
  if (absl::Status status =
          EnsureDirectory(ParentDirectory(options.path), options.directory_mode,
                          options.require_private_directory, sys_calls);
      !status.ok()) {
    return absl::Status(status.code(),
                        absl::StrFormat("cannot serve on %s: %s", options.path, status.message()));
  }

  absl::StatusOr<int> lock_fd = LockSocketPath(options.path, sys_calls);
  if (!lock_fd.ok()) return lock_fd.status();
  absl::Cleanup close_lock = [&] { sys_calls.Close(*lock_fd); };

  if (absl::Status status = RemoveStaleSocket(options.path, *address, options.socket_type, sys_calls); !status.ok()) {
    return status;
  }

  SysCallInt listen_fd =
      sys_calls.Socket(AF_UNIX, options.socket_type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (!listen_fd.ok()) return Failed(listen_fd.error, "cannot create socket for", options.path);
  absl::Cleanup close_listen = [&] { sys_calls.Close(listen_fd.value); };

  SysCallInt bound = sys_calls.Bind(listen_fd.value, reinterpret_cast<const sockaddr*>(&*address),
                                    sizeof(*address));
  if (!bound.ok()) return Failed(bound.error, "cannot bind", options.path);
  absl::Cleanup unlink_socket = [&] { sys_calls.Unlink(options.path); };

  SysCallInt mode_set = sys_calls.Chmod(options.path, options.mode);
  if (!mode_set.ok()) return Failed(mode_set.error, "cannot set the mode of", options.path);
  if (options.group) {
    SysCallInt owned = sys_calls.Chown(options.path, static_cast<uid_t>(-1), *options.group);
    if (!owned.ok()) return Failed(owned.error, "cannot set the group of", options.path);
  }
  struct stat info {};
  SysCallInt found = sys_calls.Lstat(options.path, &info);
  if (!found.ok()) return Failed(found.error, "cannot inspect", options.path);

  SysCallInt listening = sys_calls.Listen(listen_fd.value, kListenBacklog);
  if (!listening.ok()) return Failed(listening.error, "cannot listen on", options.path);

  const int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) return Failed(errno, "cannot create the accept loop's eventfd for", options.path);

  std::move(close_lock).Cancel();
  std::move(close_listen).Cancel();
  std::move(unlink_socket).Cancel();
  return std::unique_ptr<UnixSocketListener>(new UnixSocketListener(
      options.path, *lock_fd, listen_fd.value, wake_fd, info.st_ino, sys_calls));
}

UnixSocketListener::~UnixSocketListener() {
  Stop();
  ::close(wake_fd_);
  // The lock is released last, so that no other daemon takes the path while
  // this one still has a socket file there.
  sys_calls_.Close(lock_fd_);
}

void UnixSocketListener::Start(ConnectionCallback on_connection) {
  accept_thread_ = std::thread(
      [this, callback = std::move(on_connection)] { AcceptLoop(callback); });
}

void UnixSocketListener::Stop() {
  if (listen_fd_ < 0) return;
  const uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof(one)) != sizeof(one)) {
    spdlog::error("cannot wake the accept loop of {}: {}", path_, std::strerror(errno));
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  // Remove the file only if it is still ours: an operator may have replaced it.
  struct stat info {};
  if (sys_calls_.Lstat(path_, &info).ok() && info.st_ino == inode_) sys_calls_.Unlink(path_);
  sys_calls_.Close(listen_fd_);
  listen_fd_ = -1;
}

void UnixSocketListener::AcceptLoop(const ConnectionCallback& on_connection) {
  pollfd fds[2] = {{.fd = listen_fd_, .events = POLLIN, .revents = 0},
                   {.fd = wake_fd_, .events = POLLIN, .revents = 0}};
  while (true) {
    const int ready = ::poll(fds, 2, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      spdlog::critical("accept loop on {} failed: poll: {}", path_, std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    SysCallInt accepted = sys_calls_.Accept(listen_fd_, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (!accepted.ok()) {
      if (accepted.error == EAGAIN || accepted.error == EINTR ||
          accepted.error == ECONNABORTED) {
        continue;
      }
      spdlog::error("cannot accept a connection on {}: {}", path_, std::strerror(accepted.error));
      if (accepted.error == EMFILE || accepted.error == ENFILE || accepted.error == ENOMEM) {
        std::this_thread::sleep_for(kAcceptBackoff);
      }
      continue;
    }
    ucred credentials{};
    socklen_t length = sizeof(credentials);
    SysCallInt read_credentials =
        sys_calls_.GetSockOpt(accepted.value, SOL_SOCKET, SO_PEERCRED, &credentials, &length);
    if (!read_credentials.ok()) {
      spdlog::warn("closing a connection on {} whose peer credentials cannot be read: {}", path_,
                   std::strerror(read_credentials.error));
      sys_calls_.Close(accepted.value);
      continue;
    }
    on_connection(accepted.value, PeerCredentials{.pid = credentials.pid,
                                                  .uid = credentials.uid,
                                                  .gid = credentials.gid});
  }
}

}  // namespace neuron::rtd

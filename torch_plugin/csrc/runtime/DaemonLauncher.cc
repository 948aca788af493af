#include "csrc/runtime/DaemonLauncher.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "neuron/rtd/socket_paths.h"
#include "neuronrt/client.h"

namespace torch_neuronx {
namespace {

constexpr absl::Duration kStartTimeout = absl::Seconds(30);
constexpr std::string_view kPerUserInsteadOfSystem =
    "per-user socket (the system socket does not answer)";

bool Answers(const neuronrt::DaemonAddress& address) {
  absl::StatusOr<std::unique_ptr<neuronrt::Client>> client =
      neuronrt::Client::Connect({.address = address.target, .rpc_timeout = absl::Seconds(2)});
  return client.ok() && (*client)->Health().ok();
}

std::string Tail(const std::string& path, size_t max_bytes) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  std::string all = text.str();
  return all.size() > max_bytes ? all.substr(all.size() - max_bytes) : all;
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

// Starts `argv` detached from this process (its own session, reparented to
// init), output appended to `log_path`. Returns once the intermediate child
// has exited, so no zombie is left.
absl::Status SpawnDetached(const std::vector<std::string>& argv, const std::string& log_path) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  // Never through a symlink planted where the log goes.
  const int log_fd =
      ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (log_fd < 0) {
    return absl::UnavailableError(
        absl::StrFormat("cannot open the daemon log %s: %s", log_path, std::strerror(errno)));
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  // Only async-signal-safe calls between fork and exec: the process has
  // other threads (PyTorch's, gRPC's).
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    return absl::UnavailableError(absl::StrFormat("fork: %s", std::strerror(error)));
  }
  if (child == 0) {
    ::setsid();
    if (::fork() != 0) ::_exit(0);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execvp(args[0], args.data());
    static const char kExecFailed[] = "torch_neuronx: exec of neuron-rtd failed\n";
    (void)!::write(STDERR_FILENO, kExecFailed, sizeof(kExecFailed) - 1);
    ::_exit(127);
  }
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return absl::OkStatus();
}

}  // namespace

bool MustNameAddress(const neuronrt::DaemonAddress& address) {
  return address.origin == kPerUserInsteadOfSystem;
}

LaunchOptions LaunchOptionsFromEnvironment(std::string daemon_binary) {
  LaunchOptions options;
  options.daemon_binary = std::move(daemon_binary);
  const char* autostart = std::getenv("NEURON_RTD_AUTOSTART");
  options.autostart = autostart == nullptr || std::string_view(autostart) != "0";
  int idle = 0;
  const char* idle_exit = std::getenv("NEURON_RTD_IDLE_EXIT");
  if (idle_exit != nullptr && absl::SimpleAtoi(idle_exit, &idle) && idle >= 0) {
    options.idle_exit_seconds = idle;
  }
  return options;
}

namespace {

// Where a daemon answers, or where one would be started (`answers` false).
struct FoundAddress {
  neuronrt::DaemonAddress address;
  bool answers = false;
};

absl::StatusOr<FoundAddress> FindDaemon() {
  absl::StatusOr<neuronrt::DaemonAddress> address = neuronrt::ResolveDaemonAddress();
  if (!address.ok()) return address.status();
  if (Answers(*address)) return FoundAddress{.address = *address, .answers = true};
  if (address->origin == "system socket") {
    // A system socket nobody serves: a user cannot start the system daemon,
    // so the per-user one is started instead.
    const std::string path = neuron::rtd::PerUserSocketPath();
    address = neuronrt::DaemonAddress{.target = "unix:" + path,
                                      .socket_path = path,
                                      .origin = std::string(kPerUserInsteadOfSystem)};
  }
  return FoundAddress{.address = *address, .answers = Answers(*address)};
}

std::string BinaryOf(const LaunchOptions& options) {
  return options.daemon_binary.empty() ? "neuron-rtd" : options.daemon_binary;
}

}  // namespace

bool DaemonAnswersOrCanStart(const LaunchOptions& options) {
  absl::StatusOr<FoundAddress> found = FindDaemon();
  if (!found.ok()) return false;
  if (found->answers) return true;
  if (!options.autostart) return false;
  const std::string binary = BinaryOf(options);
  // A bare name is looked up on PATH when it is started.
  if (binary.find('/') == std::string::npos) {
    const char* path = std::getenv("PATH");
    for (absl::string_view directory : absl::StrSplit(path == nullptr ? "" : path, ':')) {
      const std::string candidate = absl::StrCat(directory, "/", binary);
      if (::access(candidate.c_str(), X_OK) == 0) return true;
    }
    return false;
  }
  return ::access(binary.c_str(), X_OK) == 0;
}

absl::StatusOr<neuronrt::DaemonAddress> EnsureDaemon(const LaunchOptions& options) {
  absl::StatusOr<FoundAddress> found = FindDaemon();
  if (!found.ok()) return found.status();
  if (found->answers) return found->address;
  std::optional<neuronrt::DaemonAddress> address = found->address;
  if (!options.autostart) {
    return absl::UnavailableError(absl::StrFormat(
        "no neuron-rtd answers at %s (%s) and NEURON_RTD_AUTOSTART=0. Start one with "
        "`neuron-rtd --socket %s` (or `systemctl start neuron-rtd` for the host-wide daemon "
        "and NEURON_RTD_ADDRESS=unix:/run/neuron-rtd/neuron-rtd.sock), or unset "
        "NEURON_RTD_AUTOSTART to let torch_neuronx start a per-user daemon",
        address->target, address->origin, address->socket_path));
  }
  const std::string directory = DirectoryOf(address->socket_path);
  if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrFormat("cannot create %s for neuron-rtd's socket: %s",
                                                  directory, std::strerror(errno)));
  }
  // A per-user directory may have been made by someone else first.
  if (address->origin != "NEURON_RTD_ADDRESS") {
    if (absl::Status trusted = neuronrt::CheckPrivateDirectory(directory); !trusted.ok()) {
      return trusted;
    }
  }
  const std::string log_path = address->socket_path + ".log";
  const std::string binary = BinaryOf(options);
  std::vector<std::string> argv = {binary, "--socket", address->socket_path, "--idle-exit",
                                   std::to_string(options.idle_exit_seconds)};
  if (!options.compiler_python.empty()) {
    argv.insert(argv.end(), {"--compiler-python", options.compiler_python});
  }
  if (absl::Status spawned = SpawnDetached(argv, log_path); !spawned.ok()) return spawned;
  // Several processes may be starting daemons at once; one of them wins the
  // socket and every process waits for whichever daemon answers.
  const absl::Time deadline = absl::Now() + kStartTimeout;
  absl::Duration backoff = absl::Milliseconds(5);
  while (!Answers(*address)) {
    if (absl::Now() > deadline) {
      return absl::UnavailableError(absl::StrFormat(
          "started %s for %s but it did not answer within %d s; its log %s ends with:\n%s",
          binary, address->target, absl::ToInt64Seconds(kStartTimeout), log_path,
          Tail(log_path, 2000)));
    }
    std::this_thread::sleep_for(absl::ToChronoMilliseconds(backoff));
    backoff = std::min(backoff * 2, absl::Milliseconds(100));
  }
  std::fprintf(stderr,
               "torch_neuronx: no neuron-rtd was running; started a per-user one on the "
               "simulated device at %s (log %s; it exits after %d s without sessions)\n",
               address->target.c_str(), log_path.c_str(), options.idle_exit_seconds);
  return *address;
}

}  // namespace torch_neuronx

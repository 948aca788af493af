#include "testing/subprocess.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "testing/unix_socket.h"

extern char** environ;

namespace neuron::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

std::vector<std::string> BuildEnvironment(const Environment& extra_env) {
  std::map<std::string, std::string> merged;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string variable(*entry);
    const size_t equals = variable.find('=');
    if (equals != std::string::npos) merged[variable.substr(0, equals)] = variable.substr(equals + 1);
  }
  for (const auto& [name, value] : extra_env) {
    if (value) {
      merged[name] = *value;
    } else {
      merged.erase(name);
    }
  }
  std::vector<std::string> result;
  for (const auto& [name, value] : merged) result.push_back(name + "=" + value);
  return result;
}

int PollOne(int fd, absl::Duration timeout) {
  pollfd entry{.fd = fd, .events = POLLIN, .revents = 0};
  const int ms = static_cast<int>(absl::ToInt64Milliseconds(timeout));
  int ready;
  do {
    ready = ::poll(&entry, 1, ms);
  } while (ready < 0 && errno == EINTR);
  return ready;
}

}  // namespace

std::string NeuronRtdBinary() { return NEURON_RTD_BINARY; }
std::string NeuronctlBinary() { return NEURONCTL_BINARY; }
std::string ClientProbeBinary() { return NEURON_CLIENT_PROBE_BINARY; }

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Spawn(
    const std::vector<std::string>& argv, const Environment& extra_env) {
  std::unique_ptr<Subprocess> process(new Subprocess());
  process->dir_ = std::make_unique<TempDir>();

  const std::string notify_path = process->dir_->Join("notify.sock");
  process->notify_fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const sockaddr_un address = UnixAddress(notify_path);
  if (::bind(process->notify_fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) !=
      0) {
    return absl::ErrnoToStatus(errno, "bind notify socket");
  }

  Environment env = extra_env;
  if (env.find("NOTIFY_SOCKET") == env.end()) env["NOTIFY_SOCKET"] = notify_path;
  std::vector<std::string> env_strings = BuildEnvironment(env);
  std::vector<char*> envp;
  for (std::string& entry : env_strings) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argvp;
  for (std::string& arg : args) argvp.push_back(arg.data());
  argvp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  const std::string out = process->dir_->Join("stdout");
  const std::string err = process->dir_->Join("stderr");
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const int spawned =
      ::posix_spawn(&process->pid_, argvp[0], &actions, nullptr, argvp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return absl::ErrnoToStatus(spawned, absl::StrCat("spawn ", argv[0]));
  // glibc 2.36 declares pidfd_open without C linkage; call it directly.
  process->pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, process->pid_, 0));
  if (process->pidfd_ < 0) return absl::ErrnoToStatus(errno, "pidfd_open");
  return process;
}

Subprocess::~Subprocess() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    Wait(absl::Seconds(30)).IgnoreError();
  }
  if (pidfd_ >= 0) ::close(pidfd_);
  if (notify_fd_ >= 0) ::close(notify_fd_);
}

void Subprocess::Signal(int signal_number) const { ::kill(pid_, signal_number); }

absl::StatusOr<int> Subprocess::Wait(absl::Duration timeout) {
  if (reaped_) return exit_code_;
  if (PollOne(pidfd_, timeout) == 0) {
    return absl::DeadlineExceededError(
        absl::StrFormat("pid %d still running after %s", pid_, absl::FormatDuration(timeout)));
  }
  int status = 0;
  if (::waitpid(pid_, &status, 0) != pid_) return absl::ErrnoToStatus(errno, "waitpid");
  reaped_ = true;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return exit_code_;
}

absl::Status Subprocess::WaitReady(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    pollfd fds[2] = {{.fd = notify_fd_, .events = POLLIN, .revents = 0},
                     {.fd = pidfd_, .events = POLLIN, .revents = 0}};
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat("not ready after ",
                                                      absl::FormatDuration(timeout),
                                                      "; stderr:\n", Stderr()));
    }
    const int ready = ::poll(fds, 2, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready < 0 && errno != EINTR) return absl::ErrnoToStatus(errno, "poll");
    if (fds[0].revents & POLLIN) {
      char buffer[4096];
      const ssize_t received = ::recv(notify_fd_, buffer, sizeof(buffer), 0);
      if (received > 0 && std::string_view(buffer, received).find("READY=1") != std::string::npos) {
        return absl::OkStatus();
      }
      continue;
    }
    if (fds[1].revents & POLLIN) {
      absl::StatusOr<int> code = Wait(absl::ZeroDuration());
      return absl::FailedPreconditionError(
          absl::StrCat("exited with ", code.ok() ? *code : -1, " before it was ready; stderr:\n",
                       Stderr()));
    }
  }
}

std::string Subprocess::Stdout() const { return ReadFile(dir_->Join("stdout")); }
std::string Subprocess::Stderr() const { return ReadFile(dir_->Join("stderr")); }

CommandResult RunCommand(const std::vector<std::string>& argv, const Environment& extra_env) {
  CommandResult result;
  absl::StatusOr<std::unique_ptr<Subprocess>> process = Subprocess::Spawn(argv, extra_env);
  if (!process.ok()) {
    result.err = std::string(process.status().message());
    return result;
  }
  absl::StatusOr<int> code = (*process)->Wait(absl::Seconds(60));
  result.exit_code = code.ok() ? *code : -1;
  result.out = (*process)->Stdout();
  result.err = (*process)->Stderr();
  return result;
}

std::vector<std::string> DaemonArgv(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {NeuronRtdBinary()};
  if (std::find(args.begin(), args.end(), "--config") == args.end()) {
    argv.insert(argv.end(), {"--config", "/dev/null"});
  }
  // Graphs stay interpreted unless a test asks for the compiler: a compile
  // takes seconds of CPU, and the disk cache outlives the test.
  if (std::find(args.begin(), args.end(), "--compile-after-launches") == args.end()) {
    argv.insert(argv.end(), {"--compile-after-launches", "0"});
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

absl::StatusOr<std::unique_ptr<Subprocess>> StartDaemon(const std::vector<std::string>& args,
                                                        const Environment& extra_env) {
  absl::StatusOr<std::unique_ptr<Subprocess>> daemon =
      Subprocess::Spawn(DaemonArgv(args), extra_env);
  if (!daemon.ok()) return daemon.status();
  if (absl::Status ready = (*daemon)->WaitReady(); !ready.ok()) return ready;
  return daemon;
}

}  // namespace neuron::testing

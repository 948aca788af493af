#include "daemon/compiler/compiler_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

extern char** environ;

namespace neuron::rtd::compiler {
namespace {

// A line the worker writes is never longer than this (its errors are cut).
constexpr size_t kMaxLineBytes = 1 << 20;

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

CompilerWorker::CompilerWorker(WorkerOptions options) : options_(std::move(options)) {}

CompilerWorker::~CompilerWorker() { Stop(); }

void CompilerWorker::Interrupt() {
  const pid_t pid = running_pid_.load();
  if (pid > 0) ::kill(-pid, SIGKILL);
}

void CompilerWorker::Stop() {
  running_pid_.store(-1);
  if (pid_ > 0) {
    // The worker leads its process group: the C++ compilers it started go too.
    ::kill(-pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
  CloseFd(to_worker_);
  CloseFd(from_worker_);
  pending_.clear();
}

std::string CompilerWorker::LogTail() const {
  std::ifstream file(options_.scratch_dir + "/worker.log");
  std::stringstream text;
  text << file.rdbuf();
  std::string all = text.str();
  return all.size() > 2000 ? all.substr(all.size() - 2000) : all;
}

absl::StatusOr<WorkerInfo> CompilerWorker::Start() {
  if (pid_ > 0) return info_;
  if (::mkdir(options_.scratch_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrFormat(
        "cannot create the compiler worker's directory %s: %s", options_.scratch_dir,
        std::strerror(errno)));
  }
  int to[2], from[2];
  if (::pipe2(to, O_CLOEXEC) != 0) return absl::ErrnoToStatus(errno, "compiler worker pipe");
  if (::pipe2(from, O_CLOEXEC) != 0) {
    ::close(to[0]);
    ::close(to[1]);
    return absl::ErrnoToStatus(errno, "compiler worker pipe");
  }
  const std::string log_path = options_.scratch_dir + "/worker.log";
  const int log_fd = ::open(log_path.c_str(),
                            O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  // Everything the child needs is made before fork: after it, only system
  // calls (the daemon has other threads).
  std::vector<std::string> arguments = {options_.python, options_.script};
  std::vector<std::string> environment;
  for (char** variable = environ; *variable != nullptr; ++variable) {
    const std::string_view entry(*variable);
    if (entry.starts_with("TORCHINDUCTOR_CACHE_DIR=")) continue;
    environment.emplace_back(entry);
  }
  environment.push_back("TORCHINDUCTOR_CACHE_DIR=" + options_.scratch_dir + "/inductor");
  environment.push_back("TORCHINDUCTOR_CPP_DYNAMIC_THREADS=1");
  std::vector<char*> argv, envp;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  for (std::string& variable : environment) envp.push_back(variable.data());
  envp.push_back(nullptr);
  const rlimit memory{.rlim_cur = options_.max_memory_bytes, .rlim_max = options_.max_memory_bytes};
  const rlimit no_core{.rlim_cur = 0, .rlim_max = 0};
  sigset_t all_signals;
  sigemptyset(&all_signals);

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    for (int fd : {to[0], to[1], from[0], from[1], log_fd}) {
      if (fd >= 0) ::close(fd);
    }
    return absl::ErrnoToStatus(error, "starting the compiler worker");
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    // The daemon blocks its stop signals in every thread; the worker must not.
    ::sigprocmask(SIG_SETMASK, &all_signals, nullptr);
    ::setpriority(PRIO_PROCESS, 0, options_.nice);
    ::setrlimit(RLIMIT_CORE, &no_core);
    if (options_.max_memory_bytes > 0) ::setrlimit(RLIMIT_AS, &memory);
    ::dup2(to[0], STDIN_FILENO);
    ::dup2(from[1], STDOUT_FILENO);
    if (log_fd >= 0) ::dup2(log_fd, STDERR_FILENO);
    ::execvpe(argv[0], argv.data(), envp.data());
    static const char kExecFailed[] = "neuron-rtd: cannot exec the compiler worker's Python\n";
    [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, kExecFailed, sizeof(kExecFailed) - 1);
    ::_exit(127);
  }
  ::close(to[0]);
  ::close(from[1]);
  if (log_fd >= 0) ::close(log_fd);
  pid_ = pid;
  running_pid_.store(pid);
  to_worker_ = to[1];
  from_worker_ = from[0];
  ++starts_;
  absl::StatusOr<std::string> hello = ReadLine(absl::Now() + options_.start_timeout);
  if (!hello.ok()) {
    Stop();
    return absl::UnavailableError(absl::StrFormat(
        "the compiler worker (%s %s) did not start: %s; its log %s ends with:\n%s",
        options_.python, options_.script, hello.status().message(), log_path, LogTail()));
  }
  const nlohmann::json said = nlohmann::json::parse(*hello, nullptr, /*allow_exceptions=*/false);
  if (!said.is_object() || !said.value("ready", false)) {
    Stop();
    return absl::UnavailableError(
        absl::StrFormat("the compiler worker said %s instead of being ready", hello->substr(0, 200)));
  }
  info_ = WorkerInfo{.torch_version = said.value("torch", ""),
                     .cpu_capability = said.value("isa", "")};
  ever_ready_ = true;
  spdlog::info("compiler worker pid {} started (torch {}, {})", pid_, info_.torch_version,
               info_.cpu_capability);
  return info_;
}

absl::StatusOr<std::string> CompilerWorker::ReadLine(absl::Time deadline) {
  while (true) {
    if (const size_t end = pending_.find('\n'); end != std::string::npos) {
      std::string line = pending_.substr(0, end);
      pending_.erase(0, end + 1);
      return line;
    }
    if (pending_.size() > kMaxLineBytes) {
      return absl::InternalError("the compiler worker wrote a line longer than 1 MiB");
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return absl::DeadlineExceededError("no answer in time");
    pollfd readable{.fd = from_worker_, .events = POLLIN, .revents = 0};
    const int ready = ::poll(&readable, 1,
                             static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1,
                                                                60'000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return absl::ErrnoToStatus(errno, "waiting for the compiler worker");
    if (ready == 0) continue;
    char buffer[65536];
    const ssize_t got = ::read(from_worker_, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return absl::UnavailableError("the compiler worker exited");
    pending_.append(buffer, static_cast<size_t>(got));
  }
}

absl::Status CompilerWorker::Compile(std::string_view graph_json, const std::string& output) {
  if (absl::StatusOr<WorkerInfo> started = Start(); !started.ok()) return started.status();
  const uint64_t id = next_request_++;
  // The graph is already JSON: spliced in rather than parsed again.
  std::string request = absl::StrFormat(R"({"id": %d, "output": %s, "graph": )", id,
                                        nlohmann::json(output).dump());
  request.append(graph_json);
  request.append("}\n");
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t wrote = ::write(to_worker_, request.data() + sent, request.size() - sent);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      Stop();
      return absl::UnavailableError("the compiler worker stopped reading its requests");
    }
    sent += static_cast<size_t>(wrote);
  }
  const absl::Time deadline = absl::Now() + options_.timeout;
  while (true) {
    absl::StatusOr<std::string> line = ReadLine(deadline);
    if (!line.ok()) {
      const std::string tail = LogTail();
      Stop();
      if (line.status().code() == absl::StatusCode::kDeadlineExceeded) {
        return absl::DeadlineExceededError(absl::StrFormat(
            "the graph did not compile within %s; the worker was stopped",
            absl::FormatDuration(options_.timeout)));
      }
      return absl::UnavailableError(absl::StrFormat("the compiler worker died (%s); its log "
                                                    "ends with:\n%s",
                                                    line.status().message(), tail));
    }
    const nlohmann::json said = nlohmann::json::parse(*line, nullptr, /*allow_exceptions=*/false);
    if (!said.is_object() || !said.contains("id")) continue;  // not an answer
    if (!said["id"].is_number_unsigned() || said["id"].get<uint64_t>() != id) continue;
    if (said.value("ok", false)) return absl::OkStatus();
    return absl::InternalError(said.value("error", std::string("the worker gave no reason")));
  }
}

}  // namespace neuron::rtd::compiler

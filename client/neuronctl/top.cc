#include "client/neuronctl/top.h"

#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <optional>

#include "client/neuronctl/top_frame.h"

namespace neuronctl {
namespace {

volatile std::sig_atomic_t interrupted = 0;

void OnInterrupt(int) { interrupted = 1; }

int64_t ClockNs(clockid_t clock) {
  timespec now{};
  ::clock_gettime(clock, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

// The terminal in the mode a live view needs (keys unbuffered and not
// echoed, the alternate screen, no cursor) for as long as it lives.
class LiveTerminal {
 public:
  LiveTerminal() {
    if (::tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      restore_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    std::fputs("\x1b[?1049h\x1b[?25l", stdout);
  }
  LiveTerminal(const LiveTerminal&) = delete;
  LiveTerminal& operator=(const LiveTerminal&) = delete;
  ~LiveTerminal() {
    std::fputs("\x1b[?25h\x1b[?1049l", stdout);
    std::fflush(stdout);
    if (restore_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }

  static int Columns() {
    winsize size{};
    return ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 ? size.ws_col : 0;
  }

 private:
  termios saved_{};
  bool restore_ = false;
};

// SIGINT and SIGTERM end the view (poll returns EINTR) instead of the
// process, so the terminal is restored; the old handlers come back after.
class InterruptHandlers {
 public:
  InterruptHandlers() {
    struct sigaction action {};
    action.sa_handler = OnInterrupt;
    ::sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
  }
  InterruptHandlers(const InterruptHandlers&) = delete;
  InterruptHandlers& operator=(const InterruptHandlers&) = delete;
  ~InterruptHandlers() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

absl::StatusOr<TopSnapshot> Take(const neuronrt::Client& client, const std::string& target) {
  TopSnapshot snapshot;
  snapshot.target = target;
  absl::StatusOr<neuronrt::HealthInfo> health = client.Health();
  if (!health.ok()) return health.status();
  snapshot.health = *std::move(health);
  absl::StatusOr<std::vector<neuronrt::DeviceInfo>> devices = client.ListDevices();
  if (!devices.ok()) return devices.status();
  snapshot.devices = *std::move(devices);
  absl::StatusOr<neuronrt::Stats> stats = client.GetStats();
  if (!stats.ok()) return stats.status();
  snapshot.cores = std::move(stats->cores);
  absl::StatusOr<std::vector<neuronrt::SessionInfo>> sessions = client.ListSessions();
  if (!sessions.ok()) return sessions.status();
  snapshot.sessions = *std::move(sessions);
  snapshot.monotonic_ns = ClockNs(CLOCK_MONOTONIC);
  snapshot.unix_ms = ClockNs(CLOCK_REALTIME) / 1'000'000;
  for (const neuronrt::SessionInfo& session : snapshot.sessions) {
    const uint32_t uid = session.owner.uid;
    if (snapshot.user_names.count(uid) != 0) continue;
    passwd entry{};
    passwd* found = nullptr;
    char buffer[4096];
    if (::getpwuid_r(uid, &entry, buffer, sizeof(buffer), &found) == 0 && found != nullptr) {
      snapshot.user_names[uid] = found->pw_name;
    }
  }
  return snapshot;
}

// Waits `interval`; true when the user asked to quit (q, Ctrl-C).
bool WaitOrQuit(absl::Duration interval, bool keys) {
  const int64_t deadline = ClockNs(CLOCK_MONOTONIC) + absl::ToInt64Nanoseconds(interval);
  while (interrupted == 0) {
    const int64_t left = deadline - ClockNs(CLOCK_MONOTONIC);
    if (left <= 0) return false;
    pollfd input{.fd = STDIN_FILENO, .events = POLLIN, .revents = 0};
    const int ready = ::poll(keys ? &input : nullptr, keys ? 1 : 0,
                             static_cast<int>((left + 999'999) / 1'000'000));
    if (ready > 0 && (input.revents & POLLIN) != 0) {
      char key = 0;
      if (::read(STDIN_FILENO, &key, 1) == 1 && (key == 'q' || key == 'Q')) return true;
    }
    if (ready > 0 && (input.revents & (POLLHUP | POLLERR)) != 0) keys = false;
  }
  return true;
}

}  // namespace

absl::Status RunTop(const neuronrt::Client& client, const TopOptions& options) {
  interrupted = 0;
  InterruptHandlers handlers;
  const bool live = !options.batch && !options.json;
  std::optional<LiveTerminal> terminal;
  if (live) terminal.emplace();
  std::optional<TopSnapshot> previous;
  for (int frame = 0; options.frames == 0 || frame < options.frames; ++frame) {
    if (frame > 0 && WaitOrQuit(options.interval, live)) break;
    absl::StatusOr<TopSnapshot> now = Take(client, options.target);
    if (!now.ok()) return now.status();
    const TopSnapshot* before = previous ? &*previous : nullptr;
    if (options.json) {
      std::printf("%s\n", TopFrameJson(*now, before).dump().c_str());
    } else if (live) {
      std::printf("\x1b[H\x1b[2J%s(q to quit)",
                  RenderTopFrame(*now, before, LiveTerminal::Columns()).c_str());
    } else {
      std::printf("%s%s", frame > 0 ? "\n" : "", RenderTopFrame(*now, before, 0).c_str());
    }
    std::fflush(stdout);
    previous = *std::move(now);
    if (interrupted != 0) break;
  }
  return absl::OkStatus();
}

}  // namespace neuronctl

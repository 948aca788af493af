#include "client/neuronctl/top_frame.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/neuronctl/format.h"

namespace neuronctl {
namespace {

constexpr int kBarWidth = 20;

// [#########           ]  45%
std::string Bar(double fraction) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int filled = static_cast<int>(fraction * kBarWidth + 0.5);
  return absl::StrFormat("[%s%s] %3.0f%%", std::string(filled, '#'),
                         std::string(kBarWidth - filled, ' '), fraction * 100);
}

// Events per second between two counts, or nullopt without a previous
// snapshot (or a counter that went back: the daemon restarted).
std::optional<double> Rate(uint64_t now, uint64_t before, const TopSnapshot& at,
                           const TopSnapshot* previous) {
  if (previous == nullptr || now < before || at.monotonic_ns <= previous->monotonic_ns) {
    return std::nullopt;
  }
  return static_cast<double>(now - before) * 1e9 /
         static_cast<double>(at.monotonic_ns - previous->monotonic_ns);
}

std::string FormatRate(std::optional<double> rate) {
  return rate ? absl::StrFormat("%.0f", *rate) : "-";
}

nlohmann::json RateJson(std::optional<double> rate) {
  return rate ? nlohmann::json(*rate) : nlohmann::json(nullptr);
}

std::string FormatUptime(uint64_t ms) {
  const uint64_t seconds = ms / 1000;
  return absl::StrFormat("%d:%02d:%02d", seconds / 3600, seconds / 60 % 60, seconds % 60);
}

const neuronrt::CoreStats* FindCore(const TopSnapshot* snapshot, uint32_t core) {
  if (snapshot == nullptr) return nullptr;
  for (const neuronrt::CoreStats& each : snapshot->cores) {
    if (each.core == core) return &each;
  }
  return nullptr;
}

const neuronrt::SessionInfo* FindSession(const TopSnapshot* snapshot, uint64_t id) {
  if (snapshot == nullptr) return nullptr;
  for (const neuronrt::SessionInfo& each : snapshot->sessions) {
    if (each.session_id == id) return &each;
  }
  return nullptr;
}

std::optional<double> CoreRate(const TopSnapshot& now, const TopSnapshot* previous,
                               const neuronrt::CoreStats& core, uint64_t neuronrt::CoreStats::*of) {
  const neuronrt::CoreStats* before = FindCore(previous, core.core);
  return before == nullptr ? std::nullopt : Rate(core.*of, before->*of, now, previous);
}

std::optional<double> SessionRate(const TopSnapshot& now, const TopSnapshot* previous,
                                  const neuronrt::SessionInfo& session) {
  const neuronrt::SessionInfo* before = FindSession(previous, session.session_id);
  return before == nullptr ? std::nullopt
                           : Rate(session.commands_completed, before->commands_completed, now,
                                  previous);
}

// The device whose cores include host-wide core `core`.
int64_t DeviceOfCore(const TopSnapshot& snapshot, uint32_t core) {
  for (const neuronrt::DeviceInfo& device : snapshot.devices) {
    if (std::find(device.cores.begin(), device.cores.end(), core) != device.cores.end()) {
      return device.index;
    }
  }
  return -1;
}

std::string UserName(const TopSnapshot& snapshot, uint32_t uid) {
  auto it = snapshot.user_names.find(uid);
  return it != snapshot.user_names.end() ? it->second : absl::StrFormat("%d", uid);
}

// Heaviest users of the cores first, then by id.
std::vector<const neuronrt::SessionInfo*> SessionsByShare(const TopSnapshot& snapshot) {
  std::vector<const neuronrt::SessionInfo*> sessions;
  for (const neuronrt::SessionInfo& session : snapshot.sessions) sessions.push_back(&session);
  std::stable_sort(sessions.begin(), sessions.end(), [](const auto* a, const auto* b) {
    if (a->recent_core_share != b->recent_core_share) {
      return a->recent_core_share > b->recent_core_share;
    }
    return a->session_id < b->session_id;
  });
  return sessions;
}

std::string Cut(const std::string& text, int columns) {
  if (columns <= 0) return text;
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const absl::string_view kept = line.substr(0, static_cast<size_t>(columns));
    out.append(kept.data(), kept.size());
    out.push_back('\n');
  }
  out.pop_back();
  return out;
}

}  // namespace

std::string RenderTopFrame(const TopSnapshot& now, const TopSnapshot* previous, int columns) {
  const neuronrt::HealthInfo& health = now.health;
  std::string frame = absl::StrFormat(
      "neuron-rtd %s at %s: %s, %s backend, up %s, %d session(s)\n", health.daemon_version,
      now.target, health.state, health.backend, FormatUptime(health.uptime_ms),
      now.sessions.size());
  for (const auto& [core, fault] : health.failed_cores) {
    absl::StrAppendFormat(&frame, "core %d FAILED: %s\n", core, fault);
  }
  for (const neuronrt::DeviceInfo& device : now.devices) {
    const double used = device.hbm_total_bytes == 0
                            ? 0.0
                            : static_cast<double>(device.hbm_used_bytes) /
                                  static_cast<double>(device.hbm_total_bytes);
    absl::StrAppendFormat(&frame, "device %d  HBM %s  %s of %s\n", device.index, Bar(used),
                          FormatBytes(device.hbm_used_bytes), FormatBytes(device.hbm_total_bytes));
  }
  frame += "\n";
  std::vector<std::vector<std::string>> cores = {
      {"CORE", "DEVICE", "BUSY (last second)", "UTIL", "CMD/S", "HOST/S", "FAILED"}};
  for (const neuronrt::CoreStats& core : now.cores) {
    cores.push_back({absl::StrFormat("%d", core.core),
                     absl::StrFormat("%d", DeviceOfCore(now, core.core)),
                     Bar(core.recent_compute_utilization),
                     absl::StrFormat("%.1f%%", core.utilization * 100),
                     FormatRate(CoreRate(now, previous, core,
                                         &neuronrt::CoreStats::executions_completed)),
                     FormatRate(CoreRate(now, previous, core,
                                         &neuronrt::CoreStats::host_executed_launches)),
                     absl::StrFormat("%d", core.executions_failed)});
  }
  frame += RenderTable(cores) + "\n";
  std::vector<std::vector<std::string>> sessions = {
      {"SESSION", "PID", "USER", "CLIENT", "CORES", "HBM", "CMD/S", "SHARE", "QUEUED"}};
  for (const neuronrt::SessionInfo* session : SessionsByShare(now)) {
    sessions.push_back({absl::StrFormat("%d", session->session_id),
                        absl::StrFormat("%d", session->owner.pid),
                        UserName(now, session->owner.uid),
                        TableCell(session->client_name, 32),
                        FormatIndexRanges(session->cores), FormatBytes(session->hbm_used_bytes),
                        FormatRate(SessionRate(now, previous, *session)),
                        absl::StrFormat("%.0f%%", session->recent_core_share * 100),
                        absl::StrFormat("%d", session->queued_commands)});
  }
  frame += RenderTable(sessions);
  return Cut(frame, columns);
}

nlohmann::json TopFrameJson(const TopSnapshot& now, const TopSnapshot* previous) {
  nlohmann::json devices = nlohmann::json::array();
  for (const neuronrt::DeviceInfo& device : now.devices) {
    devices.push_back({{"index", device.index},
                       {"hbm_used_bytes", device.hbm_used_bytes},
                       {"hbm_total_bytes", device.hbm_total_bytes}});
  }
  nlohmann::json cores = nlohmann::json::array();
  for (const neuronrt::CoreStats& core : now.cores) {
    cores.push_back(
        {{"core", core.core},
         {"device", DeviceOfCore(now, core.core)},
         {"recent_compute_utilization", core.recent_compute_utilization},
         {"utilization", core.utilization},
         {"commands_per_s",
          RateJson(CoreRate(now, previous, core, &neuronrt::CoreStats::executions_completed))},
         {"host_launches_per_s",
          RateJson(CoreRate(now, previous, core, &neuronrt::CoreStats::host_executed_launches))},
         {"executions_failed", core.executions_failed}});
  }
  nlohmann::json sessions = nlohmann::json::array();
  for (const neuronrt::SessionInfo* session : SessionsByShare(now)) {
    sessions.push_back({{"session_id", session->session_id},
                        {"pid", session->owner.pid},
                        {"uid", session->owner.uid},
                        {"user", UserName(now, session->owner.uid)},
                        {"client_name", session->client_name},
                        {"cores", session->cores},
                        {"hbm_used_bytes", session->hbm_used_bytes},
                        {"commands_per_s", RateJson(SessionRate(now, previous, *session))},
                        {"recent_core_share", session->recent_core_share},
                        {"queued_commands", session->queued_commands}});
  }
  nlohmann::json failed = nlohmann::json::array();
  for (const auto& [core, fault] : now.health.failed_cores) {
    failed.push_back({{"core", core}, {"fault", fault}});
  }
  return {{"time_unix_ms", now.unix_ms},
          {"daemon",
           {{"address", now.target},
            {"version", now.health.daemon_version},
            {"state", now.health.state},
            {"backend", now.health.backend},
            {"uptime_ms", now.health.uptime_ms},
            {"failed_cores", std::move(failed)}}},
          {"devices", std::move(devices)},
          {"cores", std::move(cores)},
          {"sessions", std::move(sessions)}};
}

}  // namespace neuronctl

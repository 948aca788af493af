#include "client/neuronctl/format.h"

#include <algorithm>
#include <array>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace neuronctl {

std::string FormatBytes(uint64_t bytes) {
  constexpr std::array<const char*, 6> kUnits = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return absl::StrFormat("%d B", bytes);
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  if (value == static_cast<double>(static_cast<uint64_t>(value))) {
    return absl::StrFormat("%d %s", static_cast<uint64_t>(value), kUnits[unit]);
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

std::string FormatIndexRanges(const std::vector<uint32_t>& indices) {
  std::vector<uint32_t> sorted = indices;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> parts;
  for (size_t start = 0; start < sorted.size();) {
    size_t end = start;
    while (end + 1 < sorted.size() && sorted[end + 1] == sorted[end] + 1) ++end;
    parts.push_back(end == start ? absl::StrFormat("%d", sorted[start])
                                 : absl::StrFormat("%d-%d", sorted[start], sorted[end]));
    start = end + 1;
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, ",");
}

std::string TableCell(const std::string& text, size_t max_length) {
  if (text.empty()) return "-";
  std::string cell = text.size() > max_length ? text.substr(0, max_length - 3) + "..." : text;
  for (char& c : cell) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) c = '?';
  }
  return cell;
}

std::string RenderTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (size_t column = 0; column < row.size(); ++column) {
      widths[column] = std::max(widths[column], row[column].size());
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t column = 0; column < row.size(); ++column) {
      line += row[column];
      if (column + 1 < row.size()) line += std::string(widths[column] - row[column].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

namespace {

// [{core, fault}] of failed cores.
nlohmann::json FaultsJson(const std::map<uint32_t, std::string>& faults) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [core, fault] : faults) list.push_back({{"core", core}, {"fault", fault}});
  return list;
}

}  // namespace

std::string DevicesTable(const std::vector<neuronrt::DeviceInfo>& devices) {
  const std::vector<std::string> header = {"DEVICE", "INSTANCE TYPE", "ARCH",     "BACKEND",
                                           "CORES",  "LNC",           "HBM TOTAL", "HBM USED",
                                           "CONNECTED"};
  std::vector<std::vector<std::string>> rows = {header};
  for (const neuronrt::DeviceInfo& device : devices) {
    rows.push_back({absl::StrFormat("%d", device.index), device.instance_type,
                    device.architecture, device.backend,
                    absl::StrFormat("%d (%s)", device.cores.size(),
                                    FormatIndexRanges(device.cores)),
                    absl::StrFormat("%d", device.logical_nc_config),
                    FormatBytes(device.hbm_total_bytes), FormatBytes(device.hbm_used_bytes),
                    device.connected_devices.empty()
                        ? "-"
                        : absl::StrJoin(device.connected_devices, ",")});
  }
  std::string table = RenderTable(rows);
  std::set<std::string> sources;
  for (const neuronrt::DeviceInfo& device : devices) {
    if (!device.topology_source.empty()) sources.insert(device.topology_source);
  }
  if (!sources.empty()) {
    absl::StrAppendFormat(&table, "topology from: %s\n", absl::StrJoin(sources, ", "));
  }
  for (const neuronrt::DeviceInfo& device : devices) {
    for (const auto& [core, fault] : device.core_faults) {
      absl::StrAppendFormat(&table, "core %d of device %d failed: %s\n", core, device.index,
                            fault);
    }
  }
  return table;
}

nlohmann::json DevicesJson(const std::vector<neuronrt::DeviceInfo>& devices) {
  nlohmann::json list = nlohmann::json::array();
  for (const neuronrt::DeviceInfo& device : devices) {
    list.push_back({
        {"index", device.index},
        {"instance_type", device.instance_type},
        {"architecture", device.architecture},
        {"backend", device.backend},
        {"physical_cores", device.physical_cores},
        {"logical_nc_config", device.logical_nc_config},
        {"cores", device.cores.size()},
        {"core_indices", device.cores},
        {"failed_cores", FaultsJson(device.core_faults)},
        {"hbm_total_bytes", device.hbm_total_bytes},
        {"hbm_used_bytes", device.hbm_used_bytes},
        {"connected_devices", device.connected_devices},
        {"bus_id", device.bus_id},
        {"topology_source", device.topology_source},
    });
  }
  return {{"devices", std::move(list)}};
}

std::string SessionsTable(const std::vector<neuronrt::SessionInfo>& sessions) {
  std::vector<std::vector<std::string>> rows = {{"SESSION", "PID", "UID", "CLIENT", "CORES",
                                                 "HBM USED", "STREAMS", "COMPLETED", "FAILED",
                                                 "EXECUTABLES", "QUEUED", "WEIGHT",
                                                 "CORE SHARE"}};
  for (const neuronrt::SessionInfo& session : sessions) {
    rows.push_back({absl::StrFormat("%d", session.session_id),
                    absl::StrFormat("%d", session.owner.pid),
                    absl::StrFormat("%d", session.owner.uid),
                    TableCell(session.client_name),
                    FormatIndexRanges(session.cores), FormatBytes(session.hbm_used_bytes),
                    absl::StrFormat("%d", session.stream_count),
                    absl::StrFormat("%d", session.commands_completed),
                    absl::StrFormat("%d", session.commands_failed),
                    absl::StrFormat("%d", session.executable_count),
                    absl::StrFormat("%d", session.queued_commands),
                    absl::StrFormat("%d", session.share_weight),
                    absl::StrFormat("%.0f%%", 100 * session.recent_core_share)});
  }
  return RenderTable(rows);
}

nlohmann::json SessionsJson(const std::vector<neuronrt::SessionInfo>& sessions) {
  nlohmann::json list = nlohmann::json::array();
  for (const neuronrt::SessionInfo& session : sessions) {
    list.push_back({
        {"session_id", session.session_id},
        {"pid", session.owner.pid},
        {"uid", session.owner.uid},
        {"gid", session.owner.gid},
        {"client_name", session.client_name},
        {"cores", session.cores},
        {"hbm_used_bytes", session.hbm_used_bytes},
        {"streams", session.stream_count},
        {"commands_completed", session.commands_completed},
        {"commands_failed", session.commands_failed},
        {"opened_at_unix_ms", session.opened_at_unix_ms},
        {"executables", session.executable_count},
        {"share_weight", session.share_weight},
        {"device_time_ns", session.device_time_ns},
        {"recent_core_share", session.recent_core_share},
        {"queued_commands", session.queued_commands},
    });
  }
  return {{"sessions", std::move(list)}};
}

std::string CacheText(const neuronrt::CacheInfo& cache) {
  const uint64_t lookups = cache.hits + cache.misses;
  const neuronrt::CompilerInfo& compiler = cache.compiler;
  std::string compiled = "off";
  if (compiler.enabled) {
    compiled = absl::StrFormat(
        "after %d launches; %d built (%.1f s), %d failed, %d from disk, %d queued",
        compiler.compile_after_launches, compiler.builds, compiler.build_seconds,
        compiler.failures, compiler.disk_hits, compiler.queued);
    if (!compiler.unavailable.empty()) compiled += "; unavailable: " + compiler.unavailable;
  }
  return absl::StrFormat(
      "executables  %d (%d held by live sessions)\n"
      "bytes        %s of %s (%s held; at most %s per user)\n"
      "lookups      %d hits, %d misses%s\n"
      "evictions    %d\n"
      "compiled     %s\n"
      "on disk      %d graph(s), %s%s\n",
      cache.entries, cache.held_entries, FormatBytes(cache.memory_bytes),
      FormatBytes(cache.max_bytes), FormatBytes(cache.held_bytes),
      FormatBytes(cache.max_bytes_per_user), cache.hits, cache.misses,
      lookups == 0 ? ""
                   : absl::StrFormat(" (%.1f%% hit)", 100.0 * static_cast<double>(cache.hits) /
                                                         static_cast<double>(lookups)),
      cache.evictions, compiled, compiler.disk_entries, FormatBytes(compiler.disk_bytes),
      compiler.disk_path.empty() ? "" : " in " + compiler.disk_path);
}

nlohmann::json CacheJson(const neuronrt::CacheInfo& cache) {
  const neuronrt::CompilerInfo& compiler = cache.compiler;
  return {{"entries", cache.entries},
          {"memory_bytes", cache.memory_bytes},
          {"held_entries", cache.held_entries},
          {"held_bytes", cache.held_bytes},
          {"hits", cache.hits},
          {"misses", cache.misses},
          {"evictions", cache.evictions},
          {"max_bytes", cache.max_bytes},
          {"max_bytes_per_user", cache.max_bytes_per_user},
          {"compiler",
           {{"enabled", compiler.enabled},
            {"compile_after_launches", compiler.compile_after_launches},
            {"builds", compiler.builds},
            {"failures", compiler.failures},
            {"disk_hits", compiler.disk_hits},
            {"queued", compiler.queued},
            {"worker_starts", compiler.worker_starts},
            {"build_seconds", compiler.build_seconds},
            {"unavailable", compiler.unavailable},
            {"ready", compiler.ready},
            {"python", compiler.python},
            {"worker_torch_version", compiler.worker_torch_version},
            {"disk_entries", compiler.disk_entries},
            {"disk_bytes", compiler.disk_bytes},
            {"disk_path", compiler.disk_path}}}};
}

std::string ExecutablesTable(const std::vector<neuronrt::CachedExecutable>& executables) {
  std::vector<std::vector<std::string>> rows = {
      {"ID", "KIND", "TIER", "BYTES", "HOLDERS", "LAUNCHES", "THREADS", "COMPILE", "NAME"}};
  for (const neuronrt::CachedExecutable& executable : executables) {
    std::string compile = "-";
    if (executable.kind == "graph") {
      compile = executable.compile_seconds > 0
                    ? absl::StrFormat("%.1f s", executable.compile_seconds)
                    : executable.compile_state;
    }
    rows.push_back({absl::StrFormat("%d", executable.executable_id), executable.kind,
                    absl::StrFormat("%d", executable.tier), FormatBytes(executable.bytes),
                    absl::StrFormat("%d", executable.holders),
                    absl::StrFormat("%d", executable.launches),
                    executable.host_threads == 0 ? std::string("-")
                                                 : absl::StrFormat("%d", executable.host_threads),
                    compile,
                    executable.name.substr(0, 60)});
  }
  return RenderTable(rows);
}

nlohmann::json ExecutablesJson(const std::vector<neuronrt::CachedExecutable>& executables) {
  nlohmann::json list = nlohmann::json::array();
  for (const neuronrt::CachedExecutable& executable : executables) {
    list.push_back({{"executable_id", executable.executable_id},
                    {"name", executable.name},
                    {"kind", executable.kind},
                    {"bytes", executable.bytes},
                    {"holders", executable.holders},
                    {"launches", executable.launches},
                    {"tier", executable.tier},
                    {"compile_state", executable.compile_state},
                    {"compile_seconds", executable.compile_seconds},
                    {"host_threads", executable.host_threads},
                    {"compile_key", executable.compile_key},
                    {"disk_cache", executable.disk_cache}});
  }
  return {{"executables", std::move(list)}};
}

absl::StatusOr<std::string> CacheWhyText(
    const std::vector<neuronrt::CachedExecutable>& executables, const std::string& graph) {
  std::string text;
  std::vector<std::string> graphs;
  for (const neuronrt::CachedExecutable& executable : executables) {
    if (executable.kind != "graph") continue;
    graphs.push_back(executable.name);
    if (executable.name != graph && absl::StrFormat("%d", executable.executable_id) != graph) {
      continue;
    }
    absl::StrAppendFormat(&text, "graph %s (executable %d), %d launch(es): tier %d, %s\n",
                          executable.name, executable.executable_id, executable.launches,
                          executable.tier, executable.compile_state);
    absl::StrAppendFormat(&text, "  disk cache: %s\n",
                          executable.disk_cache.empty()
                              ? "none: this daemon does not compile graphs (`neuronctl cache` "
                                "says why)"
                              : executable.disk_cache);
  }
  if (!text.empty()) return text;
  std::sort(graphs.begin(), graphs.end());
  graphs.erase(std::unique(graphs.begin(), graphs.end()), graphs.end());
  return absl::NotFoundError(absl::StrFormat(
      "no graph executable is named %s or has that id; the daemon holds %s", graph,
      graphs.empty() ? std::string("none") : absl::StrJoin(graphs, ", ")));
}

namespace {

std::string FormatNanoseconds(uint64_t ns) {
  if (ns < 1000) return absl::StrFormat("%d ns", ns);
  if (ns < 1'000'000) return absl::StrFormat("%.1f us", static_cast<double>(ns) / 1e3);
  return absl::StrFormat("%.1f ms", static_cast<double>(ns) / 1e6);
}

}  // namespace

namespace {

std::string CountOrDash(const std::optional<uint64_t>& count) {
  return count ? absl::StrFormat("%d", *count) : "-";
}

std::string DeviceMemoryTable(const std::vector<neuronrt::DeviceStats>& devices) {
  std::vector<std::vector<std::string>> rows = {
      {"DEVICE", "HBM TOTAL", "TENSORS", "PROGRAMS", "RUNTIME", "LARGEST FREE", "SEGMENTS",
       "HBM ECC CE/UE/REPAIR", "SRAM ECC CE/UE"}};
  for (const neuronrt::DeviceStats& device : devices) {
    const neuronrt::EccCounts& ecc = device.ecc;
    const auto& programs = device.programs;
    rows.push_back({absl::StrFormat("%d", device.device_index),
                    FormatBytes(device.hbm_total_bytes), FormatBytes(device.tensors_bytes),
                    programs ? FormatBytes(programs->model_code + programs->constants +
                                           programs->scratchpad)
                             : "-",
                    device.runtime_bytes ? FormatBytes(*device.runtime_bytes) : "-",
                    FormatBytes(device.hbm_largest_free_bytes),
                    absl::StrFormat("%d", device.hbm_segments),
                    absl::StrFormat("%s/%s/%s", CountOrDash(ecc.mem_corrected),
                                    CountOrDash(ecc.mem_uncorrected),
                                    CountOrDash(ecc.mem_repairable_uncorrected)),
                    absl::StrFormat("%s/%s", CountOrDash(ecc.sram_corrected),
                                    CountOrDash(ecc.sram_uncorrected))});
  }
  return RenderTable(rows);
}

// The counts the device reports; the others left out (unknown is not 0).
nlohmann::json EccJson(const neuronrt::EccCounts& ecc) {
  nlohmann::json counts = nlohmann::json::object();
  const std::pair<const char*, const std::optional<uint64_t>*> fields[] = {
      {"mem_corrected", &ecc.mem_corrected},
      {"mem_uncorrected", &ecc.mem_uncorrected},
      {"mem_repairable_uncorrected", &ecc.mem_repairable_uncorrected},
      {"sram_corrected", &ecc.sram_corrected},
      {"sram_uncorrected", &ecc.sram_uncorrected}};
  for (const auto& [name, count] : fields) {
    if (count->has_value()) counts[name] = **count;
  }
  return counts;
}

}  // namespace

std::string StatsTable(const neuronrt::Stats& stats) {
  std::vector<std::vector<std::string>> rows = {
      {"CORE", "UTIL", "NOW", "COMPLETED", "FAILED", "TIMED OUT", "HOST", "P50", "P99", "MAX"}};
  for (const neuronrt::CoreStats& core : stats.cores) {
    const bool ran =
        core.executions_completed + core.executions_failed + core.executions_timed_out > 0;
    rows.push_back({absl::StrFormat("%d", core.core),
                    absl::StrFormat("%.1f%%", core.utilization * 100),
                    absl::StrFormat("%.0f%%", core.recent_compute_utilization * 100),
                    absl::StrFormat("%d", core.executions_completed),
                    absl::StrFormat("%d", core.executions_failed),
                    absl::StrFormat("%d", core.executions_timed_out),
                    absl::StrFormat("%d", core.host_executed_launches),
                    ran ? "<" + FormatNanoseconds(core.latency_p50_ns + 1) : "-",
                    ran ? "<" + FormatNanoseconds(core.latency_p99_ns + 1) : "-",
                    ran ? "<" + FormatNanoseconds(core.latency_max_ns + 1) : "-"});
  }
  return RenderTable(rows) + "\n" + DeviceMemoryTable(stats.devices);
}

nlohmann::json StatsJson(const neuronrt::Stats& stats) {
  nlohmann::json list = nlohmann::json::array();
  for (const neuronrt::CoreStats& core : stats.cores) {
    list.push_back({
        {"core", core.core},
        {"utilization", core.utilization},
        {"recent_compute_utilization", core.recent_compute_utilization},
        {"executions_completed", core.executions_completed},
        {"executions_failed", core.executions_failed},
        {"executions_timed_out", core.executions_timed_out},
        {"host_executed_launches", core.host_executed_launches},
        {"busy_ns", core.busy_ns},
        {"latency_p50_ns", core.latency_p50_ns},
        {"latency_p99_ns", core.latency_p99_ns},
        {"latency_max_ns", core.latency_max_ns},
    });
  }
  nlohmann::json devices = nlohmann::json::array();
  for (const neuronrt::DeviceStats& device : stats.devices) {
    nlohmann::json core_memory = nlohmann::json::array();
    for (const neuronrt::DeviceStats::CoreMemory& core : device.core_memory) {
      core_memory.push_back({{"core", core.core},
                             {"tensors", core.tensors},
                             {"model_code", core.model_code},
                             {"constants", core.constants},
                             {"scratchpad", core.scratchpad},
                             {"runtime", core.runtime}});
    }
    devices.push_back({
        {"device", device.device_index},
        {"hbm_total_bytes", device.hbm_total_bytes},
        {"tensors_bytes", device.tensors_bytes},
        {"runtime_bytes", device.runtime_bytes ? nlohmann::json(*device.runtime_bytes)
                                               : nlohmann::json(nullptr)},
        {"program_bytes", device.programs
                              ? nlohmann::json{{"model_code", device.programs->model_code},
                                               {"constants", device.programs->constants},
                                               {"scratchpad", device.programs->scratchpad}}
                              : nlohmann::json(nullptr)},
        {"core_memory", std::move(core_memory)},
        {"hbm_largest_free_bytes", device.hbm_largest_free_bytes},
        {"hbm_segments", device.hbm_segments},
        {"ecc", EccJson(device.ecc)},
    });
  }
  return {{"cores", std::move(list)}, {"devices", std::move(devices)}};
}

std::string CompilerState(const neuronrt::CompilerInfo& compiler) {
  if (!compiler.enabled) return "off";
  if (!compiler.unavailable.empty()) return "cannot compile: " + compiler.unavailable;
  if (!compiler.ready) return "starting its worker";
  return absl::StrFormat("ready (%s, torch %s)", compiler.python, compiler.worker_torch_version);
}

std::string HealthText(const neuronrt::HealthInfo& health, const std::string& target) {
  const std::string degraded =
      health.failed_cores.empty()
          ? ""
          : absl::StrFormat(", %d core(s) failed", health.failed_cores.size());
  std::string text = absl::StrFormat(
      "neuron-rtd %s at %s: %s%s\n  pid %d, up %.1f s, %s backend, %d device(s), %d core(s)\n",
      health.daemon_version, target, health.state, degraded, health.daemon_pid,
      static_cast<double>(health.uptime_ms) / 1000.0, health.backend, health.device_count,
      health.core_count);
  for (const auto& [core, fault] : health.failed_cores) {
    absl::StrAppendFormat(&text, "  core %d failed: %s\n", core, fault);
  }
  absl::StrAppendFormat(&text, "  compiler: %s\n", CompilerState(health.compiler));
  return text;
}

nlohmann::json HealthJson(const neuronrt::HealthInfo& health, const std::string& target) {
  return {
      {"address", target},
      {"state", health.state},
      {"daemon_version", health.daemon_version},
      {"daemon_pid", health.daemon_pid},
      {"uptime_ms", health.uptime_ms},
      {"backend", health.backend},
      {"device_count", health.device_count},
      {"core_count", health.core_count},
      {"failed_cores", FaultsJson(health.failed_cores)},
      {"compiler", {{"enabled", health.compiler.enabled},
                    {"ready", health.compiler.ready},
                    {"python", health.compiler.python},
                    {"worker_torch_version", health.compiler.worker_torch_version},
                    {"unavailable", health.compiler.unavailable}}},
      {"caller", {{"pid", health.caller.pid}, {"uid", health.caller.uid},
                  {"gid", health.caller.gid}}},
  };
}

std::string CommunicatorsTable(const std::vector<neuronrt::CommunicatorInfo>& communicators) {
  std::vector<std::vector<std::string>> rows = {
      {"GROUP", "RANKS", "HOSTS", "COMPLETED", "PENDING", "STATE", "MEMBERS"}};
  for (const neuronrt::CommunicatorInfo& communicator : communicators) {
    std::vector<std::string> members;
    for (size_t rank = 0; rank < communicator.members.size(); ++rank) {
      members.push_back(absl::StrFormat(
          "%d: %s", rank,
          communicator.members[rank].empty() ? "(not joined)" : communicator.members[rank]));
    }
    rows.push_back({communicator.name, absl::StrFormat("%d", communicator.size),
                    communicator.hosts > 1 ? absl::StrFormat("%d (this: %d)", communicator.hosts,
                                                             communicator.host)
                                           : "1",
                    absl::StrFormat("%d", communicator.collectives_completed),
                    absl::StrFormat("%d", communicator.operations_pending),
                    communicator.aborted.empty() ? "ok" : "aborted: " + communicator.aborted,
                    absl::StrJoin(members, "; ")});
  }
  return RenderTable(rows);
}

nlohmann::json CommunicatorsJson(const std::vector<neuronrt::CommunicatorInfo>& communicators) {
  nlohmann::json list = nlohmann::json::array();
  for (const neuronrt::CommunicatorInfo& communicator : communicators) {
    list.push_back({{"name", communicator.name},
                    {"size", communicator.size},
                    {"members", communicator.members},
                    {"collectives_completed", communicator.collectives_completed},
                    {"operations_pending", communicator.operations_pending},
                    {"aborted", communicator.aborted},
                    {"hosts", communicator.hosts},
                    {"host", communicator.host}});
  }
  return {{"groups", std::move(list)}};
}

std::string GrantsTable(const std::vector<neuronrt::GrantInfo>& grants) {
  std::vector<std::vector<std::string>> rows = {
      {"GRANT", "CORES", "HBM USED", "HBM QUOTA", "SESSIONS", "LABEL", "DIRECTORY"}};
  for (const neuronrt::GrantInfo& grant : grants) {
    rows.push_back({TableCell(grant.grant_id), absl::StrJoin(grant.cores, ","),
                    FormatBytes(grant.hbm_used_bytes),
                    grant.hbm_quota_bytes == 0 ? "-" : FormatBytes(grant.hbm_quota_bytes),
                    absl::StrFormat("%d", grant.session_count), TableCell(grant.label),
                    TableCell(grant.directory)});
  }
  return RenderTable(rows);
}

nlohmann::json GrantJson(const neuronrt::GrantInfo& grant) {
  return {{"grant_id", grant.grant_id},
          {"cores", grant.cores},
          {"hbm_quota_bytes", grant.hbm_quota_bytes},
          {"hbm_used_bytes", grant.hbm_used_bytes},
          {"label", grant.label},
          {"directory", grant.directory},
          {"session_count", grant.session_count},
          {"created_at_unix_ms", grant.created_at_unix_ms}};
}

nlohmann::json GrantsJson(const std::vector<neuronrt::GrantInfo>& grants) {
  nlohmann::json list = nlohmann::json::array();
  for (const neuronrt::GrantInfo& grant : grants) list.push_back(GrantJson(grant));
  return {{"grants", std::move(list)}};
}

}  // namespace neuronctl

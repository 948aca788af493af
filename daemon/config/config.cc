#include "daemon/config/config.h"

#include <unistd.h>

#include <array>
#include <span>
#include <fstream>
#include <sstream>
#include <toml++/toml.h>
#include <variant>

#include "absl/strings/match.h"
#include "neuron/rtd/abi/command_ring.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "daemon/hal/sim/presets.h"
#include "neuron/rtd/socket_paths.h"

namespace neuron::rtd {
namespace {

using Value = std::variant<std::string, int64_t>;

enum class ValueKind { kString, kInteger };

// Applies a value to the configuration, or says why it is invalid (without
// naming the key: the caller adds where the value came from).
using ApplyFn = absl::Status (*)(const Value& value, DaemonConfig& config);

struct KeySpec {
  std::string_view section;
  std::string_view name;
  ValueKind kind;
  ApplyFn apply;
};

constexpr std::array<std::string_view, 7> kLogLevels = {"trace", "debug", "info", "warn",
                                                        "error", "critical", "off"};
// sockaddr_un's sun_path holds 108 bytes including the terminator.
constexpr size_t kMaxSocketPathBytes = 107;

// absl::StrJoin cannot format std::string_view with Debian's Abseil.
std::string JoinNames(std::span<const std::string_view> names) {
  return absl::StrJoin(names, ", ", [](std::string* out, std::string_view name) {
    out->append(name);
  });
}

absl::Status ApplySocket(const Value& value, DaemonConfig& config) {
  const auto& path = std::get<std::string>(value);
  if (!absl::StartsWith(path, "/")) return absl::InvalidArgumentError("must be an absolute path");
  if (path.size() > kMaxSocketPathBytes) {
    return absl::InvalidArgumentError(absl::StrCat("is ", path.size(),
                                                   " bytes long; a Unix socket path holds at most ",
                                                   kMaxSocketPathBytes));
  }
  config.server.socket_path = path;
  return absl::OkStatus();
}

absl::Status ApplySocketGroup(const Value& value, DaemonConfig& config) {
  config.server.socket_group = std::get<std::string>(value);
  return absl::OkStatus();
}

absl::Status ApplyMaxMessageBytes(const Value& value, DaemonConfig& config) {
  const int64_t bytes = std::get<int64_t>(value);
  constexpr int64_t kMin = 64 << 10;
  constexpr int64_t kMax = 1ll << 30;
  if (bytes < kMin || bytes > kMax) {
    return absl::InvalidArgumentError(absl::StrCat("must be between ", kMin, " and ", kMax));
  }
  config.server.max_message_bytes = static_cast<uint64_t>(bytes);
  return absl::OkStatus();
}

absl::Status ApplyShutdownTimeout(const Value& value, DaemonConfig& config) {
  const int64_t ms = std::get<int64_t>(value);
  constexpr int64_t kMax = 600'000;
  if (ms < 0 || ms > kMax) {
    return absl::InvalidArgumentError(absl::StrCat("must be between 0 and ", kMax));
  }
  config.server.shutdown_timeout_ms = static_cast<uint32_t>(ms);
  return absl::OkStatus();
}

absl::Status ApplyIdleExit(const Value& value, DaemonConfig& config) {
  const int64_t seconds = std::get<int64_t>(value);
  constexpr int64_t kMax = 7 * 24 * 3600;
  if (seconds < 0 || seconds > kMax) {
    return absl::InvalidArgumentError(absl::StrCat("must be between 0 and ", kMax));
  }
  config.server.idle_exit_seconds = static_cast<uint32_t>(seconds);
  return absl::OkStatus();
}

absl::Status ApplyLogLevel(const Value& value, DaemonConfig& config) {
  const auto& level = std::get<std::string>(value);
  if (std::find(kLogLevels.begin(), kLogLevels.end(), level) == kLogLevels.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("must be one of ", JoinNames(kLogLevels)));
  }
  config.log.level = level;
  return absl::OkStatus();
}

absl::Status ApplyBackend(const Value& value, DaemonConfig& config) {
  const auto& backend = std::get<std::string>(value);
  if (backend != "sim" && backend != "nrt") {
    return absl::InvalidArgumentError("must be \"sim\" or \"nrt\"");
  }
  config.device.backend = backend;
  return absl::OkStatus();
}

absl::Status ApplyNrtLibrary(const Value& value, DaemonConfig& config) {
  config.device.nrt_library = std::get<std::string>(value);
  return absl::OkStatus();
}

absl::Status ApplyNrtVisibleCores(const Value& value, DaemonConfig& config) {
  const auto& cores = std::get<std::string>(value);
  for (char c : cores) {
    if ((c < '0' || c > '9') && c != '-' && c != ',') {
      return absl::InvalidArgumentError(
          "must list cores as NEURON_RT_VISIBLE_CORES does, e.g. \"0-7\" or \"4,5\"");
    }
  }
  config.device.nrt_visible_cores = cores;
  return absl::OkStatus();
}

absl::Status ApplyNrtSysfsRoot(const Value& value, DaemonConfig& config) {
  const auto& root = std::get<std::string>(value);
  if (root.empty() || root.front() != '/') {
    return absl::InvalidArgumentError("must be an absolute path");
  }
  config.device.nrt_sysfs_root = root;
  return absl::OkStatus();
}

absl::Status ApplyLogicalNcConfig(const Value& value, DaemonConfig& config) {
  const int64_t lnc = std::get<int64_t>(value);
  if (lnc != 1 && lnc != 2) return absl::InvalidArgumentError("must be 1 or 2");
  config.device.logical_nc_config = static_cast<uint32_t>(lnc);
  return absl::OkStatus();
}

absl::Status ApplySimPreset(const Value& value, DaemonConfig& config) {
  const auto& preset = std::get<std::string>(value);
  if (hal::sim::FindSimPreset(preset) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("is not a preset; known presets: ", hal::sim::SimPresetNames()));
  }
  config.sim.preset = preset;
  return absl::OkStatus();
}

// A string key stored into a field of a section.
template <auto Section, auto Field>
absl::Status ApplyString(const Value& value, DaemonConfig& config) {
  config.*Section.*Field = std::get<std::string>(value);
  return absl::OkStatus();
}

// An integer key in [minimum, maximum] stored into a field of a section.
template <auto Section, auto Field, int64_t kMinimum, int64_t kMaximum>
absl::Status ApplyBounded(const Value& value, DaemonConfig& config) {
  const int64_t number = std::get<int64_t>(value);
  if (number < kMinimum || number > kMaximum) {
    return absl::InvalidArgumentError(
        absl::StrCat("must be between ", kMinimum, " and ", kMaximum));
  }
  auto& field = config.*Section.*Field;
  field = static_cast<std::remove_reference_t<decltype(field)>>(number);
  return absl::OkStatus();
}

template <auto Field, int64_t kMinimum, int64_t kMaximum>
constexpr auto kSessionKey = ApplyBounded<&DaemonConfig::session, Field, kMinimum, kMaximum>;
template <auto Field, int64_t kMinimum, int64_t kMaximum>
constexpr auto kSimKey = ApplyBounded<&DaemonConfig::sim, Field, kMinimum, kMaximum>;
template <auto Field, int64_t kMinimum, int64_t kMaximum>
constexpr auto kExecutablesKey =
    ApplyBounded<&DaemonConfig::executables, Field, kMinimum, kMaximum>;

template <auto Field, int64_t kMinimum, int64_t kMaximum>
constexpr auto kSchedulerKey = ApplyBounded<&DaemonConfig::scheduler, Field, kMinimum, kMaximum>;

template <auto Field, int64_t kMinimum, int64_t kMaximum>
constexpr auto kCompilerKey = ApplyBounded<&DaemonConfig::compiler, Field, kMinimum, kMaximum>;

constexpr int64_t kTiB = int64_t{1} << 40;

constexpr std::array kKeys = {
    KeySpec{"server", "socket", ValueKind::kString, ApplySocket},
    KeySpec{"server", "socket_group", ValueKind::kString, ApplySocketGroup},
    KeySpec{"server", "max_message_bytes", ValueKind::kInteger, ApplyMaxMessageBytes},
    KeySpec{"server", "shutdown_timeout_ms", ValueKind::kInteger, ApplyShutdownTimeout},
    KeySpec{"server", "idle_exit_seconds", ValueKind::kInteger, ApplyIdleExit},
    KeySpec{"server", "max_connections_per_user", ValueKind::kInteger,
            ApplyBounded<&DaemonConfig::server, &ServerConfig::max_connections_per_user, 1,
                         65536>},
    KeySpec{"server", "grants_directory", ValueKind::kString,
            ApplyString<&DaemonConfig::server, &ServerConfig::grants_directory>},
    KeySpec{"server", "max_grants", ValueKind::kInteger,
            ApplyBounded<&DaemonConfig::server, &ServerConfig::max_grants, 0, 4096>},
    KeySpec{"log", "level", ValueKind::kString, ApplyLogLevel},
    KeySpec{"device", "backend", ValueKind::kString, ApplyBackend},
    KeySpec{"device", "logical_nc_config", ValueKind::kInteger, ApplyLogicalNcConfig},
    KeySpec{"device", "nrt_library", ValueKind::kString, ApplyNrtLibrary},
    KeySpec{"device", "sim_plugin", ValueKind::kString,
            ApplyString<&DaemonConfig::device, &DeviceConfig::sim_plugin>},
    KeySpec{"device", "nrt_visible_cores", ValueKind::kString, ApplyNrtVisibleCores},
    KeySpec{"device", "nrt_sysfs_root", ValueKind::kString, ApplyNrtSysfsRoot},
    KeySpec{"sim", "preset", ValueKind::kString, ApplySimPreset},
    KeySpec{"sim", "max_launch_host_bytes", ValueKind::kInteger,
            kSimKey<&SimConfig::max_launch_host_bytes, 1 << 20, kTiB>},
    KeySpec{"sim", "parallel_launch_min_us", ValueKind::kInteger,
            kSimKey<&SimConfig::parallel_launch_min_us, 0, 1'000'000>},
    KeySpec{"session", "max_hbm_bytes", ValueKind::kInteger,
            kSessionKey<&SessionSettings::max_hbm_bytes, 0, 64 * kTiB>},
    KeySpec{"session", "max_streams", ValueKind::kInteger,
            kSessionKey<&SessionSettings::max_streams, 1, 4096>},
    KeySpec{"session", "max_ring_bytes", ValueKind::kInteger,
            kSessionKey<&SessionSettings::max_ring_bytes, NEURON_RTD_MIN_RING_BYTES, 64 << 20>},
    KeySpec{"session", "staging_bytes", ValueKind::kInteger,
            kSessionKey<&SessionSettings::staging_bytes, 1 << 20, int64_t{16} << 30>},
    KeySpec{"session", "max_host_memory_bytes", ValueKind::kInteger,
            kSessionKey<&SessionSettings::max_host_memory_bytes, 0, 64 * kTiB>},
    KeySpec{"session", "attach_timeout_ms", ValueKind::kInteger,
            kSessionKey<&SessionSettings::attach_timeout_ms, 100, 600'000>},
    KeySpec{"session", "max_sessions", ValueKind::kInteger,
            kSessionKey<&SessionSettings::max_sessions, 1, 65536>},
    KeySpec{"session", "max_sessions_per_user", ValueKind::kInteger,
            kSessionKey<&SessionSettings::max_sessions_per_user, 1, 65536>},
    KeySpec{"session", "max_pending_connections", ValueKind::kInteger,
            kSessionKey<&SessionSettings::max_pending_connections, 1, 65536>},
    KeySpec{"session", "max_pending_connections_per_user", ValueKind::kInteger,
            kSessionKey<&SessionSettings::max_pending_connections_per_user, 1, 65536>},
    KeySpec{"executables", "max_cache_bytes", ValueKind::kInteger,
            kExecutablesKey<&ExecutableSettings::max_cache_bytes, 1 << 20, kTiB>},
    KeySpec{"executables", "max_bytes_per_user", ValueKind::kInteger,
            kExecutablesKey<&ExecutableSettings::max_bytes_per_user, 1 << 20, kTiB>},
    KeySpec{"scheduler", "quantum_us", ValueKind::kInteger,
            kSchedulerKey<&SchedulerSettings::quantum_us, 10, 1'000'000>},
    KeySpec{"scheduler", "priority_lead_ms", ValueKind::kInteger,
            kSchedulerKey<&SchedulerSettings::priority_lead_ms, 0, 60'000>},
    KeySpec{"scheduler", "priority_aging_ms", ValueKind::kInteger,
            kSchedulerKey<&SchedulerSettings::priority_aging_ms, 1, 60'000>},
    KeySpec{"scheduler", "anticipation_us", ValueKind::kInteger,
            kSchedulerKey<&SchedulerSettings::anticipation_us, 0, 10'000>},
    KeySpec{"scheduler", "default_weight", ValueKind::kInteger,
            kSchedulerKey<&SchedulerSettings::default_weight, 1, kMaxShareWeight>},
    KeySpec{"compiler", "compile_after_launches", ValueKind::kInteger,
            kCompilerKey<&CompilerSettings::compile_after_launches, 0, 1'000'000>},
    KeySpec{"fabric", "provider", ValueKind::kString,
            ApplyString<&DaemonConfig::fabric, &FabricSettings::provider>},
    KeySpec{"fabric", "interface", ValueKind::kString,
            ApplyString<&DaemonConfig::fabric, &FabricSettings::interface>},
    KeySpec{"fabric", "library", ValueKind::kString,
            ApplyString<&DaemonConfig::fabric, &FabricSettings::library>},
    KeySpec{"fabric", "recursive_doubling_max_bytes", ValueKind::kInteger,
            ApplyBounded<&DaemonConfig::fabric, &FabricSettings::recursive_doubling_max_bytes, 0,
                         kTiB>},
    KeySpec{"compiler", "python", ValueKind::kString,
            ApplyString<&DaemonConfig::compiler, &CompilerSettings::python>},
    KeySpec{"compiler", "worker", ValueKind::kString,
            ApplyString<&DaemonConfig::compiler, &CompilerSettings::worker>},
    KeySpec{"compiler", "cache_dir", ValueKind::kString,
            ApplyString<&DaemonConfig::compiler, &CompilerSettings::cache_dir>},
    KeySpec{"compiler", "max_cache_bytes", ValueKind::kInteger,
            kCompilerKey<&CompilerSettings::max_cache_bytes, 1 << 20, kTiB>},
    KeySpec{"compiler", "timeout_seconds", ValueKind::kInteger,
            kCompilerKey<&CompilerSettings::timeout_seconds, 1, 86'400>},
    KeySpec{"compiler", "max_worker_memory_bytes", ValueKind::kInteger,
            kCompilerKey<&CompilerSettings::max_worker_memory_bytes, 0, 64 * kTiB>},
};

const KeySpec* FindKey(std::string_view section, std::string_view name) {
  for (const KeySpec& key : kKeys) {
    if (key.section == section && key.name == name) return &key;
  }
  return nullptr;
}

bool IsSection(std::string_view section) {
  for (const KeySpec& key : kKeys) {
    if (key.section == section) return true;
  }
  return false;
}

std::string KnownKeys(std::string_view section) {
  std::vector<std::string_view> names;
  for (const KeySpec& key : kKeys) {
    if (key.section == section) names.push_back(key.name);
  }
  return JoinNames(names);
}

std::string KnownSections() {
  std::vector<std::string_view> sections;
  for (const KeySpec& key : kKeys) {
    if (std::find(sections.begin(), sections.end(), key.section) == sections.end()) {
      sections.push_back(key.section);
    }
  }
  return JoinNames(sections);
}

std::string Location(std::string_view source, const toml::source_region& region) {
  return absl::StrFormat("%s:%d", source, region.begin.line);
}

// The node as TOML would write it, for error messages.
std::string Render(const toml::node& node) {
  if (const std::optional<std::string> text = node.value<std::string>(); node.is_string()) {
    return absl::StrCat("\"", *text, "\"");
  }
  std::ostringstream out;
  node.visit([&out](const auto& value) { out << value; });
  return out.str();
}

std::string_view KindName(ValueKind kind) {
  return kind == ValueKind::kString ? "a string" : "an integer";
}

std::string_view TomlTypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    default:
      return "a date or time";
  }
}

absl::Status ApplyNode(const KeySpec& key, const toml::node& node, std::string_view source,
                       DaemonConfig& config) {
  const std::string where = Location(source, node.source());
  std::optional<Value> value;
  if (key.kind == ValueKind::kString && node.is_string()) {
    value = std::string(*node.value<std::string>());
  } else if (key.kind == ValueKind::kInteger && node.is_integer()) {
    value = *node.value<int64_t>();
  }
  if (!value) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: key '%s.%s' must be %s, got %s %s",
                                                      where, key.section, key.name,
                                                      KindName(key.kind), TomlTypeName(node),
                                                      Render(node)));
  }
  if (absl::Status status = key.apply(*value, config); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: invalid value %s for key '%s.%s': %s",
                                                      where, Render(node), key.section, key.name,
                                                      status.message()));
  }
  return absl::OkStatus();
}

absl::Status ApplyFlag(std::string_view flag, const KeySpec& key, const Value& value,
                       DaemonConfig& config) {
  if (absl::Status status = key.apply(value, config); !status.ok()) {
    const std::string shown = std::holds_alternative<std::string>(value)
                                  ? absl::StrCat("\"", std::get<std::string>(value), "\"")
                                  : absl::StrCat(std::get<int64_t>(value));
    return absl::InvalidArgumentError(
        absl::StrFormat("invalid value %s for %s: %s", shown, flag, status.message()));
  }
  return absl::OkStatus();
}

// [scheduler.user_weights]: a table of user name (or uid) = weight.
absl::Status ApplyUserWeights(const toml::node& node, std::string_view source,
                              DaemonConfig& config) {
  const toml::table* table = node.as_table();
  if (table == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: 'scheduler.user_weights' must be a table of user = weight, got %s",
        Location(source, node.source()), TomlTypeName(node)));
  }
  for (const auto& [user, weight] : *table) {
    const std::optional<int64_t> value = weight.value<int64_t>();
    if (!weight.is_integer() || !value || *value < 1 || *value > kMaxShareWeight) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: scheduler.user_weights.%s = %s: must be an integer between 1 and %d",
          Location(source, weight.source()), user.str(), Render(weight), kMaxShareWeight));
    }
    config.scheduler.user_weights[std::string(user.str())] = static_cast<uint32_t>(*value);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DaemonConfig> ParseConfig(std::string_view toml_text, std::string_view source) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& error) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: not valid TOML: %s", Location(source, error.source()), error.description()));
  }
  DaemonConfig config;
  for (const auto& [section_key, section_node] : root) {
    const std::string_view section = section_key.str();
    if (!IsSection(section)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: unknown section '%s' (known sections: %s)", Location(source, section_node.source()),
          section, KnownSections()));
    }
    const toml::table* table = section_node.as_table();
    if (table == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: '%s' must be a table [%s], got %s", Location(source, section_node.source()),
          section, section, TomlTypeName(section_node)));
    }
    for (const auto& [name_key, node] : *table) {
      if (section == "scheduler" && name_key.str() == "user_weights") {
        if (absl::Status status = ApplyUserWeights(node, source, config); !status.ok()) {
          return status;
        }
        continue;
      }
      const KeySpec* key = FindKey(section, name_key.str());
      if (key == nullptr) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: unknown key '%s.%s' (known keys in [%s]: %s)", Location(source, node.source()),
            section, name_key.str(), section, KnownKeys(section)));
      }
      if (absl::Status status = ApplyNode(*key, node, source, config); !status.ok()) {
        return status;
      }
    }
  }
  return config;
}

absl::StatusOr<DaemonConfig> LoadConfigFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    if (::access(path.c_str(), F_OK) != 0) {
      return absl::NotFoundError(absl::StrCat("config file ", path, " does not exist"));
    }
    return absl::PermissionDeniedError(absl::StrCat("cannot read config file ", path));
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  return ParseConfig(contents.str(), path);
}

absl::Status ApplyOverrides(const ConfigOverrides& overrides, DaemonConfig& config) {
  struct StringFlag {
    std::string_view flag;
    const std::optional<std::string>& value;
    std::string_view section;
    std::string_view name;
  };
  const StringFlag string_flags[] = {
      {"--socket", overrides.socket_path, "server", "socket"},
      {"--sim-preset", overrides.sim_preset, "sim", "preset"},
      {"--log-level", overrides.log_level, "log", "level"},
      {"--device-backend", overrides.device_backend, "device", "backend"},
      {"--nrt-library", overrides.nrt_library, "device", "nrt_library"},
      {"--sim-plugin", overrides.sim_plugin, "device", "sim_plugin"},
      {"--compiler-python", overrides.compiler_python, "compiler", "python"},
      {"--compiler-cache-dir", overrides.compiler_cache_dir, "compiler", "cache_dir"},
      {"--fabric-provider", overrides.fabric_provider, "fabric", "provider"},
      {"--fabric-interface", overrides.fabric_interface, "fabric", "interface"},
  };
  for (const StringFlag& flag : string_flags) {
    if (!flag.value) continue;
    if (absl::Status status =
            ApplyFlag(flag.flag, *FindKey(flag.section, flag.name), *flag.value, config);
        !status.ok()) {
      return status;
    }
  }
  if (overrides.logical_nc_config) {
    if (absl::Status status =
            ApplyFlag("--logical-nc-config", *FindKey("device", "logical_nc_config"),
                      *overrides.logical_nc_config, config);
        !status.ok()) {
      return status;
    }
  }
  if (overrides.idle_exit_seconds) {
    if (absl::Status status = ApplyFlag("--idle-exit", *FindKey("server", "idle_exit_seconds"),
                                        *overrides.idle_exit_seconds, config);
        !status.ok()) {
      return status;
    }
  }
  if (overrides.compile_after_launches) {
    return ApplyFlag("--compile-after-launches",
                     *FindKey("compiler", "compile_after_launches"),
                     *overrides.compile_after_launches, config);
  }
  return absl::OkStatus();
}

std::string EffectiveSocketPath(const ServerConfig& config) {
  if (!config.socket_path.empty()) return config.socket_path;
  return ::geteuid() == 0 ? std::string(kSystemSocketPath) : PerUserSocketPath();
}

std::string EffectiveGrantsDirectory(const ServerConfig& config) {
  if (!config.grants_directory.empty()) return config.grants_directory;
  const std::string socket = EffectiveSocketPath(config);
  const size_t slash = socket.rfind('/');
  return (slash == std::string::npos ? std::string(".") : socket.substr(0, slash)) + "/grants";
}

}  // namespace neuron::rtd

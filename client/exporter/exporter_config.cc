#include "client/exporter/exporter_config.h"

#include <array>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include <toml++/toml.h>

namespace neuron_exporter {
namespace {

// Labels the exporter's own series carry: a constant label of the same
// name would make duplicate label names.
constexpr std::array<std::string_view, 20> kReservedLabels = {
    "neuroncore", "neuron_device_index", "engine", "kind", "outcome", "reason", "mode",
    "state", "version", "backend", "category", "session_id", "pid", "uid", "client",
    "runtime_tag", "le", "pod", "namespace", "container"};

bool ValidLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  if (!absl::ascii_isalpha(static_cast<unsigned char>(name[0])) && name[0] != '_') return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

absl::Status Invalid(const std::string& path, std::string_view key, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s: [exporter] %s: %s", path, key, what));
}

}  // namespace

absl::Status AddConstantLabel(std::string_view name_equals_value, Labels& labels) {
  std::pair<std::string, std::string> split =
      absl::StrSplit(absl::string_view(name_equals_value.data(), name_equals_value.size()),
                     absl::MaxSplits('=', 1));
  const std::string& name = split.first;
  if (name_equals_value.find('=') == std::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrFormat("label '%s' is not NAME=VALUE", name_equals_value));
  }
  if (!ValidLabelName(name)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "'%s' is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting __)", name));
  }
  for (std::string_view reserved : kReservedLabels) {
    if (name == reserved) {
      return absl::InvalidArgumentError(
          absl::StrFormat("label '%s' is one the exporter's own series use", name));
    }
  }
  for (const auto& [existing, value] : labels) {
    if (existing == name) {
      return absl::InvalidArgumentError(absl::StrFormat("label '%s' is given twice", name));
    }
  }
  labels.push_back(std::move(split));
  return absl::OkStatus();
}

absl::StatusOr<ListenAddress> ParseListenAddress(std::string_view listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("listen address '%s' is not HOST:PORT", listen));
  }
  ListenAddress address;
  address.host = std::string(listen.substr(0, colon));
  if (address.host.size() > 2 && address.host.front() == '[' && address.host.back() == ']') {
    address.host = address.host.substr(1, address.host.size() - 2);
  }
  const std::string_view port = listen.substr(colon + 1);
  if (!absl::SimpleAtoi(absl::string_view(port.data(), port.size()), &address.port) || address.port < 0 ||
      address.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrFormat("listen address '%s': the port is not 0 to 65535", listen));
  }
  return address;
}

absl::StatusOr<ExporterOptions> LoadExporterConfig(const std::string& path,
                                                   ExporterOptions base) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& error) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s:%d:%d: %s", path, error.source().begin.line, error.source().begin.column,
        error.description()));
  }
  for (const auto& [key, node] : root) {
    if (key.str() != "exporter") {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: unknown table [%s] (the exporter reads [exporter])", path,
                          key.str()));
    }
  }
  const toml::table* exporter = root["exporter"].as_table();
  if (exporter == nullptr) return base;
  for (const auto& [key, node] : *exporter) {
    const std::string_view name = key.str();
    if (name == "address" || name == "listen" || name == "pod_resources_socket" ||
        name == "resource_name" || name == "device_resource_name") {
      const std::optional<std::string> value = node.value<std::string>();
      if (!value) return Invalid(path, name, "expected a string");
      if (name == "resource_name" && value->empty()) return Invalid(path, name, "is empty");
      (name == "address"                ? base.address
       : name == "listen"               ? base.listen
       : name == "pod_resources_socket" ? base.pod_resources_socket
       : name == "resource_name"        ? base.resource_name
                                        : base.device_resource_name) = *value;
    } else if (name == "neuron_monitor_compat" || name == "per_session_metrics") {
      const std::optional<bool> value = node.value<bool>();
      if (!value) return Invalid(path, name, "expected true or false");
      (name == "neuron_monitor_compat" ? base.neuron_monitor_compat : base.per_session) = *value;
    } else if (name == "daemon_timeout_ms") {
      const std::optional<int64_t> value = node.value<int64_t>();
      if (!value || *value <= 0 || *value > 600'000) {
        return Invalid(path, name, "expected milliseconds, 1 to 600000");
      }
      base.daemon_timeout = absl::Milliseconds(*value);
    } else if (name == "labels") {
      const toml::table* labels = node.as_table();
      if (labels == nullptr) return Invalid(path, name, "expected a table of NAME = \"value\"");
      for (const auto& [label, value] : *labels) {
        const std::optional<std::string> text = value.value<std::string>();
        if (!text) return Invalid(path, absl::StrFormat("labels.%s", label.str()), "expected a string");
        if (absl::Status added =
                AddConstantLabel(absl::StrFormat("%s=%s", label.str(), *text), base.labels);
            !added.ok()) {
          return Invalid(path, "labels", added.message());
        }
      }
    } else {
      return Invalid(path, name,
                     "unknown key (known: address, listen, neuron_monitor_compat, "
                     "per_session_metrics, daemon_timeout_ms, pod_resources_socket, "
                     "resource_name, device_resource_name, labels)");
    }
  }
  if (absl::StatusOr<ListenAddress> listen = ParseListenAddress(base.listen); !listen.ok()) {
    return Invalid(path, "listen", listen.status().message());
  }
  return base;
}

}  // namespace neuron_exporter

// neuron-rtd-exporter's settings from its config file (TOML, the [exporter]
// table) and its flags; flags win.
#ifndef NEURON_RTD_EXPORTER_EXPORTER_CONFIG_H_
#define NEURON_RTD_EXPORTER_EXPORTER_CONFIG_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/exporter/exporter.h"

namespace neuron_exporter {

// Reads `path` over `base`. INVALID_ARGUMENT, naming the file and the key,
// for a syntax error, an unknown key or a value of the wrong type.
absl::StatusOr<ExporterOptions> LoadExporterConfig(const std::string& path,
                                                   ExporterOptions base);

// "name=value" onto `labels`. INVALID_ARGUMENT for a name Prometheus does
// not accept ([a-zA-Z_][a-zA-Z0-9_]*, not starting "__") or one the
// exporter's own series use.
absl::Status AddConstantLabel(std::string_view name_equals_value, Labels& labels);

// HOST:PORT (the host may be a bracketed IPv6 address). INVALID_ARGUMENT
// otherwise.
struct ListenAddress {
  std::string host;
  int port = 0;
};
absl::StatusOr<ListenAddress> ParseListenAddress(std::string_view listen);

}  // namespace neuron_exporter

#endif  // NEURON_RTD_EXPORTER_EXPORTER_CONFIG_H_

// How neuronctl shows what the daemon reports: tables for people, JSON for
// programs.
#ifndef NEURONCTL_FORMAT_H_
#define NEURONCTL_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "neuronrt/device_info.h"
#include "neuronrt/stats.h"

namespace neuronctl {

// "0 B", "512 KiB", "96.0 GiB".
std::string FormatBytes(uint64_t bytes);

// Core indices as ranges: {0,1,2,3} -> "0-3", {0,2,3} -> "0,2-3".
std::string FormatIndexRanges(const std::vector<uint32_t>& indices);

// Text a client chose (a session's name), fit for a table cell on a
// terminal: control characters (a newline, an escape sequence that would
// drive the terminal) become '?', and past `max_length` bytes it is cut
// with "...". "-" when empty.
std::string TableCell(const std::string& text, size_t max_length = 48);

// Left-aligned columns, two spaces apart; the first row is the header.
std::string RenderTable(const std::vector<std::vector<std::string>>& rows);

std::string DevicesTable(const std::vector<neuronrt::DeviceInfo>& devices);
nlohmann::json DevicesJson(const std::vector<neuronrt::DeviceInfo>& devices);

std::string SessionsTable(const std::vector<neuronrt::SessionInfo>& sessions);
nlohmann::json SessionsJson(const std::vector<neuronrt::SessionInfo>& sessions);
std::string CommunicatorsTable(const std::vector<neuronrt::CommunicatorInfo>& communicators);
nlohmann::json CommunicatorsJson(const std::vector<neuronrt::CommunicatorInfo>& communicators);

// Per core, then per device: HBM by holder and the driver's ECC counts
// ("-" where the backend cannot tell).
std::string StatsTable(const neuronrt::Stats& stats);
nlohmann::json StatsJson(const neuronrt::Stats& stats);

std::string CacheText(const neuronrt::CacheInfo& cache);
nlohmann::json CacheJson(const neuronrt::CacheInfo& cache);
// `neuronctl cache ls`.
std::string ExecutablesTable(const std::vector<neuronrt::CachedExecutable>& executables);
nlohmann::json ExecutablesJson(const std::vector<neuronrt::CachedExecutable>& executables);
// `neuronctl cache why GRAPH`: the graph executables named GRAPH (or with
// that id), their tier and whether the disk cache holds their package or
// why not. NOT_FOUND, naming the graphs there are, when none matches.
absl::StatusOr<std::string> CacheWhyText(
    const std::vector<neuronrt::CachedExecutable>& executables, const std::string& graph);

// "off", "starting its worker", "ready (PYTHON, torch VERSION)" or
// "cannot compile: WHY".
std::string CompilerState(const neuronrt::CompilerInfo& compiler);
std::string HealthText(const neuronrt::HealthInfo& health, const std::string& target);
nlohmann::json HealthJson(const neuronrt::HealthInfo& health, const std::string& target);

// `neuronctl grant ls`.
std::string GrantsTable(const std::vector<neuronrt::GrantInfo>& grants);
nlohmann::json GrantJson(const neuronrt::GrantInfo& grant);
nlohmann::json GrantsJson(const std::vector<neuronrt::GrantInfo>& grants);

}  // namespace neuronctl

#endif  // NEURONCTL_FORMAT_H_

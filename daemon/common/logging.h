// Process-wide logging for neuron-rtd: spdlog to stderr, or straight to the
// journal (with priorities) when systemd runs the daemon.
#ifndef NEURON_RTD_DAEMON_COMMON_LOGGING_H_
#define NEURON_RTD_DAEMON_COMMON_LOGGING_H_

#include <string_view>

namespace neuron::rtd {

// Installs the default logger at `level` (a log.level value, already
// validated). Call once, before other threads log.
void InitLogging(std::string_view level);

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_COMMON_LOGGING_H_

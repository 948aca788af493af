// Finding neuron-rtd, and starting a per-user one when none answers (the
// "embedded default": `import torch` and a neuron tensor are enough on a
// developer machine). No PyTorch.
#ifndef TORCH_NEURONX_CSRC_RUNTIME_DAEMON_LAUNCHER_H_
#define TORCH_NEURONX_CSRC_RUNTIME_DAEMON_LAUNCHER_H_

#include <string>

#include "absl/status/statusor.h"
#include "neuronrt/address.h"

namespace torch_neuronx {

struct LaunchOptions {
  // The neuron-rtd executable; empty: "neuron-rtd" on PATH.
  std::string daemon_binary;
  // $NEURON_RTD_AUTOSTART other than "0".
  bool autostart = true;
  // Seconds an automatically started daemon stays without sessions
  // ($NEURON_RTD_IDLE_EXIT, default 300).
  int idle_exit_seconds = 300;
  // The Python interpreter of this process (it has the daemon's torch): the
  // started daemon's compiler worker runs with it.
  std::string compiler_python;
};

// Reads NEURON_RTD_AUTOSTART and NEURON_RTD_IDLE_EXIT.
LaunchOptions LaunchOptionsFromEnvironment(std::string daemon_binary);

// The address of a daemon that answers. When none does: with autostart, a
// per-user neuron-rtd on the simulated backend is started at the resolved
// address ($NEURON_RTD_ADDRESS, else the per-user socket), one line on
// stderr says so, and the call returns once it serves. Processes that race
// here all end up on one daemon (the daemon's socket lock elects it).
// Without autostart: UNAVAILABLE saying how to start one.
absl::StatusOr<neuronrt::DaemonAddress> EnsureDaemon(const LaunchOptions& options);

// Whether the device can be used without starting anything now: a daemon
// answers, or autostart is on and the daemon binary is there to start one.
// Never starts a daemon and opens no session (torch.neuron.is_available()).
bool DaemonAnswersOrCanStart(const LaunchOptions& options);

// Whether a session must be opened with `address` given explicitly: only
// when EnsureDaemon chose another socket than the client's own resolution
// would (so that errors otherwise name where the address came from).
bool MustNameAddress(const neuronrt::DaemonAddress& address);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_RUNTIME_DAEMON_LAUNCHER_H_

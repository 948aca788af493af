// neuron-rtd: the per-host Neuron runtime daemon.
#include <signal.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/common/logging.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/config/config.h"
#include "daemon/server/daemon.h"
#include "neuron/version.h"
#include "spdlog/spdlog.h"

namespace {

constexpr int kExitStartFailure = 1;
constexpr int kExitBadConfig = 2;

int Fail(int code, const absl::Status& status) {
  std::fprintf(stderr, "neuron-rtd: %s\n", std::string(status.message()).c_str());
  return code;
}

// Returns true on SIGTERM/SIGINT, false once the daemon has been idle for
// `idle_exit` (never when it is zero). Idleness is sampled once a second.
bool WaitForStop(const sigset_t& stop_signals, absl::Duration idle_exit,
                 neuron::rtd::Daemon& daemon) {
  const absl::Duration tick = idle_exit == absl::ZeroDuration()
                                  ? absl::InfiniteDuration()
                                  : std::min(absl::Seconds(1), idle_exit);
  absl::Time idle_since = absl::Now();
  while (true) {
    int signal_number = 0;
    if (tick == absl::InfiniteDuration()) {
      if (sigwait(&stop_signals, &signal_number) != 0) continue;
    } else {
      const timespec timeout = absl::ToTimespec(tick);
      signal_number = sigtimedwait(&stop_signals, nullptr, &timeout);
    }
    if (signal_number > 0) {
      spdlog::info("received {}, stopping", signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
      return true;
    }
    const absl::Time now = absl::Now();
    if (!daemon.Idle()) {
      idle_since = now;
    } else if (now - idle_since >= idle_exit) {
      return false;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace neuron::rtd;

  CLI::App app{"neuron-rtd: the Neuron runtime daemon. It owns the host's NeuronCores and HBM "
               "and serves PyTorch processes (torch_neuronx) over a Unix socket."};
  std::string config_path;
  std::string socket_path, sim_preset, log_level, device_backend, nrt_library, sim_plugin;
  int64_t logical_nc_config = 0;
  int64_t idle_exit_seconds = 0;
  std::string compiler_python, compiler_cache_dir;
  std::string fabric_provider, fabric_interface;
  int64_t compile_after_launches = 0;
  bool show_version = false;
  app.add_option("--config", config_path,
                 absl::StrFormat("TOML configuration file (default: %s when it exists)",
                                 kDefaultConfigPath));
  app.add_option("--socket", socket_path, "Unix socket to serve on (server.socket)");
  app.add_option("--sim-preset", sim_preset,
                 "simulated topology: dev, trn2.3xlarge, trn2.48xlarge, trn3 (sim.preset)");
  app.add_option("--device-backend", device_backend,
                 "sim (the simulated Trainium) or nrt (Trainium through libnrt) "
                 "(device.backend)");
  app.add_option("--nrt-library", nrt_library,
                 "path of libnrt.so.1 for the nrt backend (device.nrt_library)");
  app.add_option("--sim-plugin", sim_plugin,
                 "path of libneuron_rtd_sim.so, the simulated backend (device.sim_plugin)");
  app.add_option("--log-level", log_level,
                 "trace, debug, info, warn, error, critical or off (log.level)");
  app.add_option("--logical-nc-config", logical_nc_config,
                 "physical NeuronCores per logical core, 1 or 2 (device.logical_nc_config)");
  app.add_option("--idle-exit", idle_exit_seconds,
                 "exit after this many seconds without sessions; 0: never "
                 "(server.idle_exit_seconds)");
  app.add_option("--compiler-python", compiler_python,
                 "Python interpreter of the compiler worker, with this daemon's torch "
                 "(compiler.python)");
  app.add_option("--compiler-cache-dir", compiler_cache_dir,
                 "directory of compiled graphs (compiler.cache_dir)");
  app.add_option("--compile-after-launches", compile_after_launches,
                 "launches of a graph before it is compiled; 0: never "
                 "(compiler.compile_after_launches)");
  app.add_option("--fabric-provider", fabric_provider,
                 "libfabric provider for collectives between hosts, e.g. efa or "
                 "\"tcp;ofi_rxm\"; empty: none (fabric.provider)");
  app.add_option("--fabric-interface", fabric_interface,
                 "the provider's domain, e.g. eth0 for tcp (fabric.interface)");
  app.add_flag("--version", show_version, "print the version and exit");
  CLI11_PARSE(app, argc, argv);

  if (show_version) {
    std::printf("neuron-rtd %s\n", NEURON_RTD_VERSION);
    return 0;
  }

  // Files the daemon creates (socket, lock, directories) get their modes set
  // explicitly; nothing is ever created open to others in between.
  ::umask(0077);
  // Signals are taken synchronously by sigwait below; every thread created
  // from here on inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  DaemonConfig config;
  if (!config_path.empty() || ::access(std::string(kDefaultConfigPath).c_str(), F_OK) == 0) {
    const std::string path = config_path.empty() ? std::string(kDefaultConfigPath) : config_path;
    absl::StatusOr<DaemonConfig> loaded = LoadConfigFile(path);
    if (!loaded.ok()) return Fail(kExitBadConfig, loaded.status());
    config = *std::move(loaded);
  }
  ConfigOverrides overrides;
  if (app.count("--socket") > 0) overrides.socket_path = socket_path;
  if (app.count("--sim-preset") > 0) overrides.sim_preset = sim_preset;
  if (app.count("--log-level") > 0) overrides.log_level = log_level;
  if (app.count("--device-backend") > 0) overrides.device_backend = device_backend;
  if (app.count("--nrt-library") > 0) overrides.nrt_library = nrt_library;
  if (app.count("--sim-plugin") > 0) overrides.sim_plugin = sim_plugin;
  if (app.count("--logical-nc-config") > 0) overrides.logical_nc_config = logical_nc_config;
  if (app.count("--idle-exit") > 0) overrides.idle_exit_seconds = idle_exit_seconds;
  if (app.count("--compiler-python") > 0) overrides.compiler_python = compiler_python;
  if (app.count("--compiler-cache-dir") > 0) overrides.compiler_cache_dir = compiler_cache_dir;
  if (app.count("--fabric-provider") > 0) overrides.fabric_provider = fabric_provider;
  if (app.count("--fabric-interface") > 0) overrides.fabric_interface = fabric_interface;
  if (app.count("--compile-after-launches") > 0) {
    overrides.compile_after_launches = compile_after_launches;
  }
  if (absl::Status status = ApplyOverrides(overrides, config); !status.ok()) {
    return Fail(kExitBadConfig, status);
  }

  InitLogging(config.log.level);
  // Debian builds Abseil with mutex deadlock detection on (a debugging aid
  // that costs a graph update per lock); release builds of Abseil have it
  // off.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Create(config, DefaultOsSysCalls());
  if (!daemon.ok()) return Fail(kExitStartFailure, daemon.status());
  if (absl::Status status = (*daemon)->Start(); !status.ok()) {
    return Fail(kExitStartFailure, status);
  }
  sd_notifyf(0, "READY=1\nSTATUS=serving on unix:%s\nMAINPID=%d",
             (*daemon)->socket_path().c_str(), static_cast<int>(::getpid()));

  const absl::Duration idle_exit = absl::Seconds(config.server.idle_exit_seconds);
  if (!WaitForStop(stop_signals, idle_exit, **daemon)) {
    spdlog::info("idle for {} s, stopping", config.server.idle_exit_seconds);
  }
  sd_notify(0, "STOPPING=1");
  (*daemon)->Shutdown(absl::Milliseconds(config.server.shutdown_timeout_ms));
  daemon->reset();
  spdlog::info("stopped");
  return 0;
}

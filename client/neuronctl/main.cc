// neuronctl: the admin CLI of neuron-rtd.
//
// Exit codes: 0 success; 1 the daemon answered with an error or is not
// healthy; 2 the daemon cannot be reached, or the command line is wrong.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "client/neuronctl/format.h"
#include "client/neuronctl/top.h"
#include "neuron/version.h"
#include "neuronrt/client.h"
#include "neuronrt/session.h"

namespace {

constexpr int kExitError = 1;
constexpr int kExitUnreachable = 2;

int Report(const absl::Status& status, const std::string& address) {
  std::string message(status.message());
  if (status.code() == absl::StatusCode::kUnavailable) {
    absl::StatusOr<neuronrt::DaemonAddress> resolved = neuronrt::ResolveDaemonAddress(address);
    const std::string socket = resolved.ok() ? resolved->socket_path : "PATH";
    std::fprintf(stderr,
                 "neuronctl: %s. Start the daemon (neuron-rtd --socket %s, or systemctl start "
                 "neuron-rtd), or point --address or NEURON_RTD_ADDRESS at a running one.\n",
                 message.c_str(), socket.c_str());
    return kExitUnreachable;
  }
  std::fprintf(stderr, "neuronctl: %s\n", message.c_str());
  return status.code() == absl::StatusCode::kInvalidArgument ? kExitUnreachable : kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  // gRPC's own log lines (connection attempts and the like) would bury the
  // one line neuronctl prints; GRPC_VERBOSITY set by the user still wins.
  ::setenv("GRPC_VERBOSITY", "NONE", /*overwrite=*/0);

  CLI::App app{"neuronctl: inspect and control neuron-rtd"};
  app.require_subcommand(1);
  std::string address;
  double timeout_seconds = 10;
  app.add_option("--address", address,
                 "daemon address, unix:/path (default: $NEURON_RTD_ADDRESS, else the per-user "
                 "socket, else the system socket)");
  app.add_option("--timeout", timeout_seconds, "seconds to wait for each call")
      ->check(CLI::PositiveNumber);

  bool ls_json = false;
  CLI::App* ls = app.add_subcommand("ls", "list Neuron devices, cores and HBM");
  ls->add_flag("--json", ls_json, "print JSON instead of a table");

  bool health_json = false;
  CLI::App* health = app.add_subcommand(
      "health", "check the daemon; exit 0 when it is serving, 1 when not, 2 when unreachable");
  health->add_flag("--json", health_json, "print JSON");

  bool ps_json = false;
  CLI::App* ps = app.add_subcommand(
      "ps", "list sessions: pid, user, cores, HBM used, streams, commands completed and failed");
  ps->add_flag("--json", ps_json, "print JSON instead of a table");

  bool groups_json = false;
  CLI::App* groups = app.add_subcommand(
      "groups", "list communicators (torch.distributed process groups): ranks and their "
                "sessions, collectives completed and waiting, aborts");
  groups->add_flag("--json", groups_json, "print JSON instead of a table");

  uint64_t kill_session = 0;
  std::string kill_reason;
  CLI::App* kill = app.add_subcommand(
      "kill", "end a session as if its client had died (root, or the session's user)");
  kill->add_option("SESSION", kill_session, "session id, as `neuronctl ps` shows it")->required();
  kill->add_option("--reason", kill_reason, "recorded with the session's end");

  uint64_t share_session = 0;
  uint32_t share_weight = 1;
  CLI::App* share = app.add_subcommand(
      "share", "set a session's weight on its cores: sessions with work share a core's device "
               "time in proportion to their weights (root, or the session's user)");
  share->add_option("SESSION", share_session, "session id, as `neuronctl ps` shows it")->required();
  share->add_option("WEIGHT", share_weight, "1 to 1000; a new session has [scheduler] default_weight")
      ->required()
      ->check(CLI::Range(1, 1000));

  neuronctl::TopOptions top_options;
  double top_interval_seconds = 1;
  CLI::App* top = app.add_subcommand(
      "top", "a live view of the cores and sessions, redrawn every -d seconds; q or Ctrl-C quits");
  top->add_option("-d,--delay", top_interval_seconds, "seconds between frames (default 1)")
      ->check(CLI::Range(0.05, 3600.0));
  top->add_option("-n,--frames", top_options.frames, "frames to draw, then exit (default: until "
                                                     "quit)")
      ->check(CLI::NonNegativeNumber);
  top->add_flag("-b,--batch", top_options.batch, "print frames one after another, for logs");
  top->add_flag("--json", top_options.json, "print each frame as one line of JSON");

  bool stats_json = false;
  CLI::App* stats = app.add_subcommand(
      "stats", "per-core counters since the daemon started: utilization, commands completed "
               "and failed, execution time percentiles");
  stats->add_flag("--json", stats_json, "print JSON instead of a table");

  bool drain_off = false;
  CLI::App* drain = app.add_subcommand(
      "drain", "stop admitting new sessions for maintenance; running ones carry on (root or the "
               "daemon's user)");
  drain->add_flag("--off", drain_off, "admit sessions again");

  uint32_t reset_device = 0;
  CLI::App* reset = app.add_subcommand(
      "reset", "end every session on a device and return it to a clean state (root or the "
               "daemon's user)");
  reset->add_option("DEVICE", reset_device, "device index, as `neuronctl ls` shows it")->required();

  CLI::App* cache = app.add_subcommand(
      "cache", "the executable cache: entries, bytes, what live sessions hold, hits, evictions");
  bool cache_json = false;
  cache->add_flag("--json", cache_json, "print JSON instead of text");
  CLI::App* cache_clear = cache->add_subcommand(
      "clear", "evict every executable no session holds (root or the daemon's user)");
  bool cache_clear_disk = false;
  cache_clear->add_flag("--disk", cache_clear_disk, "also remove the compiled graphs on disk");
  CLI::App* cache_ls = cache->add_subcommand(
      "ls", "every cached executable: kind, tier, bytes, holders, launches, compile time");
  bool cache_ls_json = false;
  cache_ls->add_flag("--json", cache_ls_json, "print JSON instead of a table");
  CLI::App* cache_why = cache->add_subcommand(
      "why", "whether a graph's compiled package is in the disk cache, or why not");
  std::string cache_why_graph;
  cache_why->add_option("graph", cache_why_graph, "the graph executable's name or id")
      ->required();

  CLI::App* grant = app.add_subcommand(
      "grant", "grants: cores and an HBM quota served on a socket directory of their own (for "
               "containers; create and rm: root or the daemon's user)");
  grant->require_subcommand(1);
  std::string grant_id;
  std::string grant_cores;
  uint64_t grant_quota = 0;
  std::string grant_label;
  bool grant_json = false;
  CLI::App* grant_create = grant->add_subcommand(
      "create", "create a grant (idempotent) and print its directory");
  grant_create->add_option("GRANT", grant_id, "its id: [a-z0-9.-], at most 63")->required();
  grant_create->add_option("--cores", grant_cores, "host-wide cores, e.g. 4-7 or 0,2")
      ->required();
  grant_create->add_option("--hbm-quota", grant_quota,
                           "HBM its sessions may hold together, in bytes (default: no quota)");
  grant_create->add_option("--label", grant_label, "free text, e.g. the pod");
  grant_create->add_flag("--json", grant_json, "print JSON");
  std::string grant_reason;
  CLI::App* grant_rm = grant->add_subcommand(
      "rm", "delete a grant: its sockets go, the sessions opened through it end");
  grant_rm->add_option("GRANT", grant_id, "its id")->required();
  grant_rm->add_option("--reason", grant_reason, "recorded in the ended sessions' errors");
  CLI::App* grant_ls = grant->add_subcommand("ls", "list grants");
  grant_ls->add_flag("--json", grant_json, "print JSON instead of a table");

  CLI::App* version = app.add_subcommand("version", "print neuronctl's and the daemon's versions");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : kExitUnreachable;
  }

  if (*version) std::printf("neuronctl %s\n", NEURON_RTD_VERSION);

  absl::StatusOr<std::unique_ptr<neuronrt::Client>> client = neuronrt::Client::Connect(
      {.address = address, .rpc_timeout = absl::Seconds(timeout_seconds)});
  if (!client.ok()) return Report(client.status(), address);

  if (*ls) {
    absl::StatusOr<std::vector<neuronrt::DeviceInfo>> devices = (*client)->ListDevices();
    if (!devices.ok()) return Report(devices.status(), address);
    if (ls_json) {
      std::cout << neuronctl::DevicesJson(*devices).dump(2) << "\n";
    } else {
      std::cout << neuronctl::DevicesTable(*devices);
    }
    return 0;
  }

  if (*ps) {
    absl::StatusOr<std::vector<neuronrt::SessionInfo>> sessions = (*client)->ListSessions();
    if (!sessions.ok()) return Report(sessions.status(), address);
    if (ps_json) {
      std::cout << neuronctl::SessionsJson(*sessions).dump(2) << "\n";
    } else {
      std::cout << neuronctl::SessionsTable(*sessions);
    }
    return 0;
  }

  if (*groups) {
    absl::StatusOr<std::vector<neuronrt::CommunicatorInfo>> communicators =
        (*client)->ListCommunicators();
    if (!communicators.ok()) return Report(communicators.status(), address);
    if (groups_json) {
      std::cout << neuronctl::CommunicatorsJson(*communicators).dump(2) << "\n";
    } else {
      std::cout << neuronctl::CommunicatorsTable(*communicators);
    }
    return 0;
  }

  if (*share) {
    absl::Status set = (*client)->SetSessionWeight(share_session, share_weight);
    if (!set.ok()) return Report(set, address);
    std::printf("session %llu: weight %u\n", static_cast<unsigned long long>(share_session),
                share_weight);
    return 0;
  }

  if (*kill) {
    absl::Status killed = (*client)->KillSession(kill_session, kill_reason);
    if (!killed.ok()) return Report(killed, address);
    std::printf("session %llu ended\n", static_cast<unsigned long long>(kill_session));
    return 0;
  }

  if (*top) {
    top_options.interval = absl::Seconds(top_interval_seconds);
    top_options.target = (*client)->address().target;
    absl::Status shown = neuronctl::RunTop(**client, top_options);
    if (!shown.ok()) return Report(shown, address);
    return 0;
  }

  if (*stats) {
    absl::StatusOr<neuronrt::Stats> taken = (*client)->GetStats();
    if (!taken.ok()) return Report(taken.status(), address);
    if (stats_json) {
      std::cout << neuronctl::StatsJson(*taken).dump(2) << "\n";
    } else {
      std::cout << neuronctl::StatsTable(*taken);
    }
    return 0;
  }

  if (*drain) {
    absl::StatusOr<std::string> state = (*client)->Drain(!drain_off);
    if (!state.ok()) return Report(state.status(), address);
    std::printf("neuron-rtd is %s\n", state->c_str());
    return 0;
  }

  if (*cache_clear) {
    absl::StatusOr<neuronrt::ClearedCache> removed = (*client)->ClearCache(cache_clear_disk);
    if (!removed.ok()) return Report(removed.status(), address);
    std::printf("%llu executable(s) evicted\n", static_cast<unsigned long long>(removed->entries));
    if (cache_clear_disk) {
      std::printf("%llu compiled graph(s) removed from disk\n",
                  static_cast<unsigned long long>(removed->disk_entries));
    }
    return 0;
  }

  if (*cache_why) {
    absl::StatusOr<neuronrt::CacheInfo> info = (*client)->GetCacheInfo(/*list_executables=*/true);
    if (!info.ok()) return Report(info.status(), address);
    absl::StatusOr<std::string> why = neuronctl::CacheWhyText(info->executables, cache_why_graph);
    if (!why.ok()) {
      std::fprintf(stderr, "neuronctl: %s\n", std::string(why.status().message()).c_str());
      return kExitError;
    }
    std::cout << *why;
    return 0;
  }

  if (*cache_ls) {
    absl::StatusOr<neuronrt::CacheInfo> info = (*client)->GetCacheInfo(/*list_executables=*/true);
    if (!info.ok()) return Report(info.status(), address);
    if (cache_ls_json) {
      std::cout << neuronctl::ExecutablesJson(info->executables).dump(2) << "\n";
    } else {
      std::cout << neuronctl::ExecutablesTable(info->executables);
    }
    return 0;
  }

  if (*cache) {
    absl::StatusOr<neuronrt::CacheInfo> info = (*client)->GetCacheInfo();
    if (!info.ok()) return Report(info.status(), address);
    if (cache_json) {
      std::cout << neuronctl::CacheJson(*info).dump(2) << "\n";
    } else {
      std::cout << neuronctl::CacheText(*info);
    }
    return 0;
  }

  if (*grant_create) {
    absl::StatusOr<std::vector<uint32_t>> cores = neuronrt::ParseCoreList(grant_cores);
    if (!cores.ok()) {
      std::fprintf(stderr, "neuronctl: --cores: %s\n",
                   std::string(cores.status().message()).c_str());
      return kExitError;
    }
    bool created = false;
    absl::StatusOr<neuronrt::GrantInfo> made =
        (*client)->CreateGrant(grant_id, *cores, grant_quota, grant_label, &created);
    if (!made.ok()) return Report(made.status(), address);
    if (grant_json) {
      nlohmann::json out = neuronctl::GrantJson(*made);
      out["created"] = created;
      std::cout << out.dump(2) << "\n";
    } else {
      std::printf("grant %s %s: %s\n", made->grant_id.c_str(), created ? "created" : "exists",
                  made->directory.c_str());
    }
    return 0;
  }

  if (*grant_rm) {
    absl::StatusOr<std::vector<uint64_t>> ended = (*client)->DeleteGrant(grant_id, grant_reason);
    if (!ended.ok()) return Report(ended.status(), address);
    std::printf("grant %s deleted; %zu session(s) ended\n", grant_id.c_str(), ended->size());
    return 0;
  }

  if (*grant_ls) {
    absl::StatusOr<std::vector<neuronrt::GrantInfo>> grants = (*client)->ListGrants();
    if (!grants.ok()) return Report(grants.status(), address);
    if (grant_json) {
      std::cout << neuronctl::GrantsJson(*grants).dump(2) << "\n";
    } else {
      std::cout << neuronctl::GrantsTable(*grants);
    }
    return 0;
  }

  if (*reset) {
    absl::StatusOr<std::vector<uint64_t>> ended = (*client)->ResetDevice(reset_device);
    if (!ended.ok()) return Report(ended.status(), address);
    std::printf("device %u reset; %zu session(s) ended\n", reset_device, ended->size());
    return 0;
  }

  absl::StatusOr<neuronrt::HealthInfo> info = (*client)->Health();
  if (!info.ok()) return Report(info.status(), address);
  if (*version) {
    std::printf("neuron-rtd %s at %s\n", info->daemon_version.c_str(),
                (*client)->address().target.c_str());
    return 0;
  }
  if (health_json) {
    std::cout << neuronctl::HealthJson(*info, (*client)->address().target).dump(2) << "\n";
  } else {
    std::cout << neuronctl::HealthText(*info, (*client)->address().target);
  }
  return info->healthy() ? 0 : kExitError;
}

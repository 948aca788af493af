#include "daemon/server/daemon.h"

#include <grp.h>
#include <pwd.h>
#include <google/protobuf/stubs/logging.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/server_posix.h>

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "daemon/common/host_name.h"
#include "daemon/common/random_bytes.h"
#include "daemon/compiler/python_for_torch.h"
#include "daemon/hal/backend_factory.h"
#include "daemon/hal/sim_plugin.h"
#include "daemon/server/unimplemented_interceptor.h"
#include "neuron/rtd/socket_paths.h"
#include "spdlog/spdlog.h"

namespace neuron::rtd {
namespace {

std::optional<gid_t> LookupGroup(const std::string& name) {
  if (name.empty()) return std::nullopt;
  group entry{};
  group* found = nullptr;
  std::vector<char> buffer(16384);
  if (::getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr) {
    return std::nullopt;
  }
  return entry.gr_gid;
}

std::optional<uid_t> LookupUser(const std::string& name) {
  uint32_t uid = 0;
  if (absl::SimpleAtoi(name, &uid)) return uid;
  passwd entry{};
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (::getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr) {
    return std::nullopt;
  }
  return entry.pw_uid;
}

// [scheduler.user_weights] by uid; an error naming a user this host lacks.
absl::StatusOr<std::map<uint32_t, uint32_t>> WeightsByUid(const SchedulerSettings& settings) {
  std::map<uint32_t, uint32_t> weights;
  for (const auto& [user, weight] : settings.user_weights) {
    const std::optional<uid_t> uid = LookupUser(user);
    if (!uid) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "[scheduler.user_weights]: this host has no user '%s'", user));
    }
    weights[*uid] = weight;
  }
  return weights;
}

// The system socket is shared with a group (0660); any other socket belongs
// to the daemon's user alone (0600).
ListenerOptions MakeListenerOptions(const ServerConfig& config) {
  ListenerOptions options;
  options.path = EffectiveSocketPath(config);
  if (options.path == kSystemSocketPath) {
    options.mode = 0660;
    options.directory_mode = 0755;
    options.group = LookupGroup(config.socket_group);
    if (!options.group && !config.socket_group.empty()) {
      spdlog::warn("group '{}' (server.socket_group) does not exist; {} keeps the daemon's group",
                   config.socket_group, options.path);
    }
  } else {
    options.mode = 0600;
    options.directory_mode = 0700;
    const std::string directory = options.path.substr(0, options.path.rfind('/'));
    options.require_private_directory = directory == PerUserSocketDir();
  }
  return options;
}

std::string DataPlanePath(const std::string& socket_path) { return socket_path + ".data"; }

session::SessionConfig SessionConfigFrom(const SessionSettings& settings,
                                         const SchedulerSettings& scheduler,
                                         std::map<uint32_t, uint32_t> weights_by_uid) {
  return session::SessionConfig{
      .limits = session::SessionLimits{.max_hbm_bytes = settings.max_hbm_bytes,
                                       .max_streams = settings.max_streams,
                                       .max_ring_bytes = settings.max_ring_bytes,
                                       .staging_bytes = settings.staging_bytes,
                                       .max_host_memory_bytes = settings.max_host_memory_bytes,
                                       .share_weight = scheduler.default_weight},
      .attach_timeout = absl::Milliseconds(settings.attach_timeout_ms),
      .max_sessions = settings.max_sessions,
      .max_sessions_per_user = settings.max_sessions_per_user,
      .share_weight_by_uid = std::move(weights_by_uid)};
}

queue::CoreQueueOptions CoreQueueOptionsFrom(const SchedulerSettings& settings) {
  return queue::CoreQueueOptions{
      .fair = queue::FairQueueOptions{
          .quantum = std::chrono::microseconds(settings.quantum_us),
          .priority_lead = std::chrono::milliseconds(settings.priority_lead_ms),
          .priority_aging = std::chrono::milliseconds(settings.priority_aging_ms)},
      .anticipation = std::chrono::microseconds(settings.anticipation_us),
      .clock = {}};
}

// [compiler] cache_dir, else the service manager's cache directory, else
// the user's.
std::string CompilerCacheDir(const CompilerSettings& settings) {
  if (!settings.cache_dir.empty()) return settings.cache_dir;
  if (const char* systemd = std::getenv("CACHE_DIRECTORY"); systemd != nullptr && *systemd) {
    // systemd may list several, separated by ':'.
    return std::string(systemd).substr(0, std::string(systemd).find(':'));
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg) {
    return absl::StrCat(xdg, "/neuron-rtd");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home) {
    return absl::StrCat(home, "/.cache/neuron-rtd");
  }
  return "";
}

// [compiler] worker, else the one installed beside the sim plugin.
std::string CompilerWorkerScript(const CompilerSettings& settings) {
  if (!settings.worker.empty()) return settings.worker;
  return hal::InstalledBesideDaemon("neuron_compile_worker.py");
}

// The interpreters the compiler worker may run: [compiler] python when set,
// else those that installed the torch the sim plugin loaded, then python3
// from PATH.
std::vector<std::string> CompilerPythons(const CompilerSettings& settings,
                                         const hal::sim::SimPluginApi& plugin,
                                         OsSysCalls& sys_calls) {
  if (!settings.python.empty()) return {settings.python};
  std::vector<std::string> pythons;
  for (std::string& candidate : compiler::PythonCandidatesForTorch(plugin.torch_library_dir())) {
    struct stat status {};
    if (sys_calls.Stat(candidate, &status).ok()) pythons.push_back(std::move(candidate));
  }
  pythons.push_back("python3");
  return pythons;
}

// The compiler of hot graphs, or null (graphs stay interpreted) when it is
// turned off, its cache directory cannot be used, or there is no sim plugin
// to run what it builds (with the torch `plugin` was built with).
std::unique_ptr<compiler::CompileService> MakeCompiler(
    const CompilerSettings& settings, const absl::StatusOr<const hal::sim::SimPluginApi*>& plugin,
    OsSysCalls& sys_calls) {
  if (settings.compile_after_launches == 0) return nullptr;
  if (!plugin.ok()) return nullptr;
  const std::string cache_dir = CompilerCacheDir(settings);
  if (cache_dir.empty()) {
    spdlog::warn("compiled graphs are off: no [compiler] cache_dir, and neither "
                 "$CACHE_DIRECTORY, $XDG_CACHE_HOME nor $HOME is set");
    return nullptr;
  }
  if (cache_dir.find('/') != std::string::npos) {
    // The parents of a default directory (~/.cache) may not exist yet.
    const std::string parent = cache_dir.substr(0, cache_dir.rfind('/'));
    if (!parent.empty()) sys_calls.Mkdir(parent, 0700);
  }
  absl::StatusOr<std::unique_ptr<compiler::CompileService>> service =
      compiler::CompileService::Create(
          compiler::CompileServiceOptions{
              .worker = compiler::WorkerOptions{
                  .script = CompilerWorkerScript(settings),
                  // Per host: the directory may be shared by the daemons of
                  // many hosts, and Inductor's own cache is for one CPU.
                  .scratch_dir = cache_dir + "/worker-" + FileNameSafeHostName(),
                  .timeout = absl::Seconds(settings.timeout_seconds),
                  .max_memory_bytes = settings.max_worker_memory_bytes},
              .pythons = CompilerPythons(settings, **plugin, sys_calls),
              .cache = compiler::ArtifactCacheOptions{.directory = cache_dir,
                                                      .max_bytes = settings.max_cache_bytes},
              .compile_after_launches = settings.compile_after_launches,
              .torch_version = (*plugin)->torch_version,
              .cpu_id = compiler::HostCpuId()},
          sys_calls);
  if (!service.ok()) {
    spdlog::warn("compiled graphs are off: {}", std::string(service.status().message()));
    return nullptr;
  }
  return *std::move(service);
}

}  // namespace

Daemon::Daemon(const DaemonConfig& config, OsSysCalls& sys_calls,
               std::unique_ptr<compiler::CompileService> compiler,
               std::unique_ptr<hal::Backend> backend, std::unique_ptr<UnixSocketListener> listener,
               std::map<uint32_t, uint32_t> weights_by_uid,
               std::unique_ptr<collectives::FabricRouter> fabric)
    : config_(config),
      sys_calls_(sys_calls),
      peers_(sys_calls),
      compiler_(std::move(compiler)),
      backend_(std::move(backend)),
      memory_(*backend_),
      segment_exports_(
          [] { return RandomBytes(memory::kSegmentHandleBytes, "a segment handle"); }),
      executables_(*backend_,
                   exec::CacheLimits{.max_bytes = config.executables.max_cache_bytes,
                                     .max_bytes_per_user = config.executables.max_bytes_per_user}),
      scheduler_(*backend_, CoreQueueOptionsFrom(config.scheduler)),
      fabric_(std::move(fabric)),
      communicators_(
          collectives::RegistryOptions{
              .host_algorithms = {.recursive_doubling_max_bytes =
                                      config.fabric.recursive_doubling_max_bytes}},
          fabric_.get()),
      sessions_(SessionConfigFrom(config.session, config.scheduler, std::move(weights_by_uid)),
                *backend_, scheduler_, memory_),
      listener_(std::move(listener)),
      grants_(GrantRegistryOptions{.directory = EffectiveGrantsDirectory(config.server),
                                   .max_grants = config.server.max_grants,
                                   .host_cores = backend_->total_logical_cores()},
              sys_calls, [this](int fd, const PeerCredentials& peer) { AcceptGrpc(fd, peer); },
              [this](int fd, const PeerCredentials& peer) { data_plane_->Accept(fd, peer); }),
      admin_service_(*backend_, memory_, scheduler_, executables_, sessions_, communicators_,
                     peers_, status_, grants_, compiler_.get()),
      runtime_service_(*backend_, memory_, segment_exports_, executables_, sessions_,
                       communicators_, peers_, grants_, "unix:" + DataPlanePath(listener_->path())) {}

Daemon::~Daemon() {
  if (server_) Shutdown(absl::ZeroDuration());
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Create(const DaemonConfig& config,
                                                       OsSysCalls& sys_calls) {
  absl::StatusOr<std::map<uint32_t, uint32_t>> weights = WeightsByUid(config.scheduler);
  if (!weights.ok()) return weights.status();
  // The socket first: a second daemon started on a path already served (processes racing to
  // start one) exits at once, before it probes interpreters and builds a device.
  const ListenerOptions listener_options = MakeListenerOptions(config.server);
  absl::StatusOr<std::unique_ptr<UnixSocketListener>> listener =
      UnixSocketListener::Create(listener_options, sys_calls);
  if (!listener.ok()) return listener.status();
  const std::string sim_plugin =
      config.device.sim_plugin.empty() ? hal::DefaultSimPluginPath() : config.device.sim_plugin;
  std::unique_ptr<compiler::CompileService> graph_compiler =
      MakeCompiler(config.compiler, hal::LoadSimPlugin(sim_plugin), sys_calls);
  absl::StatusOr<std::unique_ptr<hal::Backend>> backend =
      hal::CreateBackend(hal::BackendOptions{.kind = config.device.backend,
                                             .sim_plugin = sim_plugin,
                                             .logical_nc_config = config.device.logical_nc_config,
                                             .sim_preset = config.sim.preset,
                                             .sim_max_launch_host_bytes =
                                                 config.sim.max_launch_host_bytes,
                                             .sim_parallel_launch_min_us =
                                                 config.sim.parallel_launch_min_us,
                                             .nrt_library = config.device.nrt_library,
                                             .nrt_visible_cores = config.device.nrt_visible_cores,
                                             .nrt_sysfs_root = config.device.nrt_sysfs_root,
                                             .graph_compiler = graph_compiler.get()},
                         sys_calls);
  if (!backend.ok()) return backend.status();

  std::unique_ptr<collectives::FabricRouter> fabric;
  if (!config.fabric.provider.empty()) {
    absl::StatusOr<std::unique_ptr<collectives::FabricRouter>> opened =
        collectives::FabricRouter::Open(fabric::FabricOptions{.library = config.fabric.library,
                                                              .provider = config.fabric.provider,
                                                              .interface = config.fabric.interface});
    if (!opened.ok()) return opened.status();
    fabric = *std::move(opened);
    spdlog::info("collectives between hosts over {}", fabric->description());
  }
  std::unique_ptr<Daemon> daemon(new Daemon(config, sys_calls, std::move(graph_compiler),
                                            *std::move(backend), *std::move(listener),
                                            *std::move(weights), std::move(fabric)));
  ListenerOptions data_options = listener_options;
  data_options.path = DataPlanePath(listener_options.path);
  absl::StatusOr<std::unique_ptr<DataPlane>> data_plane =
      DataPlane::Create(data_options,
                        PendingLimits{.total = config.session.max_pending_connections,
                                      .per_user = config.session.max_pending_connections_per_user},
                        daemon->sessions_, sys_calls);
  if (!data_plane.ok()) return data_plane.status();
  daemon->data_plane_ = *std::move(data_plane);
  return daemon;
}

absl::Status Daemon::Start() {
  // Protobuf logs every malformed message a client sends (invalid UTF-8 in
  // a string field) at ERROR on stderr: any client could flood the journal.
  google::protobuf::SetLogHandler([](google::protobuf::LogLevel level, const char* file, int line,
                                     const std::string& message) {
    if (level >= google::protobuf::LOGLEVEL_FATAL) {
      spdlog::critical("protobuf {}:{}: {}", file, line, message);
    } else {
      spdlog::debug("protobuf {}:{}: {}", file, line, message);
    }
  });
  grpc::ServerBuilder builder;
  const int max_message = static_cast<int>(config_.server.max_message_bytes);
  builder.SetMaxReceiveMessageSize(max_message);
  builder.SetMaxSendMessageSize(max_message);
  builder.RegisterService(&admin_service_);
  builder.RegisterService(&runtime_service_);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<CallTrackerFactory>(calls_));
  interceptors.push_back(std::make_unique<UnimplementedInterceptorFactory>());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  // No listening port: the daemon accepts connections itself, to read each
  // peer's credentials, and hands them to gRPC.
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) return absl::InternalError("cannot start the gRPC server");

  data_plane_->Start();
  listener_->Start([this](int fd, const PeerCredentials& peer) { AcceptGrpc(fd, peer); });
  const hal::Backend& backend = *backend_;
  spdlog::info("neuron-rtd serving {} {} device(s), {} core(s) on unix:{}",
               backend.devices().size(), hal::BackendKindName(backend.kind()),
               backend.total_logical_cores(), listener_->path());
  return absl::OkStatus();
}

void Daemon::AcceptGrpc(int fd, const PeerCredentials& peer) {
  if (!peers_.Admit(fd, peer, config_.server.max_connections_per_user)) {
    spdlog::warn("refused a connection from pid {} uid {}: the user has {} connections, "
                 "[server] max_connections_per_user",
                 peer.pid, peer.uid, config_.server.max_connections_per_user);
    sys_calls_.Close(fd);
    return;
  }
  spdlog::debug("connection from pid {} uid {} gid {} (fd {}{}{})", peer.pid, peer.uid, peer.gid,
                fd, peer.grant.empty() ? "" : ", grant ", peer.grant);
  grpc::AddInsecureChannelFromFd(server_.get(), fd);
}

bool Daemon::Idle() { return sessions_.List().empty() && calls_.WaitIdle(absl::ZeroDuration()); }

void Daemon::Shutdown(absl::Duration grace) {
  status_.set_state(v1::SERVING_STATE_STOPPING);
  listener_->Stop();
  grants_.DeleteAll();
  if (server_) {
    if (!calls_.WaitIdle(grace)) {
      spdlog::warn("calls still in flight after {} ms; cancelling them",
                   absl::ToInt64Milliseconds(grace));
    }
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
    server_.reset();
  }
  data_plane_.reset();
  sessions_.CloseAll("neuron-rtd is stopping");
}

}  // namespace neuron::rtd

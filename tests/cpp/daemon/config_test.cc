#include "daemon/config/config.h"

#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/temp_dir.h"

namespace neuron::rtd {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(ConfigTest, EmptyFileKeepsDefaults) {
  absl::StatusOr<DaemonConfig> config = ParseConfig("", "empty.toml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->sim.preset, "dev");
  EXPECT_EQ(config->sim.parallel_launch_min_us, 400u);
  EXPECT_EQ(config->device.backend, "sim");
  EXPECT_EQ(config->device.logical_nc_config, 0u);
  EXPECT_EQ(config->log.level, "info");
  EXPECT_EQ(config->server.socket_path, "");
  EXPECT_EQ(config->server.max_message_bytes, 64u << 20);
}

TEST(ConfigTest, ParsesEveryKey) {
  absl::StatusOr<DaemonConfig> config = ParseConfig(R"(
[server]
socket = "/run/test/rtd.sock"
socket_group = "trainers"
max_message_bytes = 1048576
shutdown_timeout_ms = 250

[log]
level = "debug"

[device]
backend = "nrt"
logical_nc_config = 1
nrt_library = "/opt/aws/neuron/lib/libnrt.so.1"
sim_plugin = "/usr/lib/neuron-rtd/libneuron_rtd_sim.so"
nrt_visible_cores = "4-7"
nrt_sysfs_root = "/host/sys/devices/virtual/neuron_device"

[sim]
preset = "trn2.48xlarge"
parallel_launch_min_us = 0

[fabric]
provider = "efa"
interface = "rdmap0s6-rdm"
library = "/opt/amazon/efa/lib/libfabric.so.1"
recursive_doubling_max_bytes = 0
)",
                                                    "full.toml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server.socket_path, "/run/test/rtd.sock");
  EXPECT_EQ(config->server.socket_group, "trainers");
  EXPECT_EQ(config->server.max_message_bytes, 1048576u);
  EXPECT_EQ(config->server.shutdown_timeout_ms, 250u);
  EXPECT_EQ(config->log.level, "debug");
  EXPECT_EQ(config->device.logical_nc_config, 1u);
  EXPECT_EQ(config->device.backend, "nrt");
  EXPECT_EQ(config->device.nrt_library, "/opt/aws/neuron/lib/libnrt.so.1");
  EXPECT_EQ(config->device.sim_plugin, "/usr/lib/neuron-rtd/libneuron_rtd_sim.so");
  EXPECT_EQ(config->device.nrt_visible_cores, "4-7");
  EXPECT_EQ(config->fabric.provider, "efa");
  EXPECT_EQ(config->fabric.interface, "rdmap0s6-rdm");
  EXPECT_EQ(config->fabric.library, "/opt/amazon/efa/lib/libfabric.so.1");
  EXPECT_EQ(config->fabric.recursive_doubling_max_bytes, 0u);
  EXPECT_EQ(config->device.nrt_sysfs_root, "/host/sys/devices/virtual/neuron_device");
  EXPECT_EQ(config->sim.preset, "trn2.48xlarge");
  EXPECT_EQ(config->sim.parallel_launch_min_us, 0u);
}

TEST(ConfigTest, ExampleConfigInDeployIsValid) {
  absl::StatusOr<DaemonConfig> config = LoadConfigFile(NEURON_EXAMPLE_CONFIG);
  ASSERT_TRUE(config.ok()) << config.status();
}

TEST(ConfigTest, SessionLimits) {
  absl::StatusOr<DaemonConfig> config = ParseConfig(R"(
[session]
max_hbm_bytes = 1073741824
max_streams = 8
max_ring_bytes = 65536
staging_bytes = 8388608
max_host_memory_bytes = 0
attach_timeout_ms = 500
max_sessions = 4
)",
                                                    "s.toml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->session.max_hbm_bytes, 1u << 30);
  EXPECT_EQ(config->session.max_streams, 8u);
  EXPECT_EQ(config->session.max_ring_bytes, 65536u);
  EXPECT_EQ(config->session.staging_bytes, 8u << 20);
  EXPECT_EQ(config->session.max_host_memory_bytes, 0u);
  EXPECT_EQ(config->session.attach_timeout_ms, 500u);
  EXPECT_EQ(config->session.max_sessions, 4u);
  EXPECT_THAT(ParseConfig("[session]\nmax_streams = 0\n", "t.toml").status().message(),
              AllOf(HasSubstr("t.toml:2"), HasSubstr("'session.max_streams'"),
                    HasSubstr("between 1 and 4096")));
  EXPECT_THAT(ParseConfig("[session]\nstaging_bytes = 1\n", "t.toml").status().message(),
              HasSubstr("between 1048576"));
}

TEST(ConfigTest, ExecutableCacheLimits) {
  absl::StatusOr<DaemonConfig> defaults = ParseConfig("", "e.toml");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->executables.max_cache_bytes, 1u << 30);
  EXPECT_EQ(defaults->executables.max_bytes_per_user, 512u << 20);
  absl::StatusOr<DaemonConfig> config = ParseConfig(
      "[executables]\nmax_cache_bytes = 2097152\nmax_bytes_per_user = 1048576\n", "e.toml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->executables.max_cache_bytes, 2u << 20);
  EXPECT_EQ(config->executables.max_bytes_per_user, 1u << 20);
  EXPECT_THAT(
      ParseConfig("[executables]\nmax_cache_bytes = 4096\n", "e.toml").status().message(),
      AllOf(HasSubstr("'executables.max_cache_bytes'"), HasSubstr("between 1048576")));
}

TEST(ConfigTest, SchedulerSettings) {
  absl::StatusOr<DaemonConfig> defaults = ParseConfig("", "s.toml");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->scheduler.quantum_us, 2000u);
  EXPECT_EQ(defaults->scheduler.anticipation_us, 100u);
  EXPECT_EQ(defaults->scheduler.priority_lead_ms, 100u);
  EXPECT_EQ(defaults->scheduler.priority_aging_ms, 20u);
  EXPECT_EQ(defaults->scheduler.default_weight, 1u);
  EXPECT_TRUE(defaults->scheduler.user_weights.empty());
  absl::StatusOr<DaemonConfig> config = ParseConfig(
      "[scheduler]\nquantum_us = 500\nanticipation_us = 0\ndefault_weight = 3\n"
      "[scheduler.user_weights]\nalice = 4\n1001 = 2\n",
      "s.toml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->scheduler.quantum_us, 500u);
  EXPECT_EQ(config->scheduler.anticipation_us, 0u);
  EXPECT_EQ(config->scheduler.default_weight, 3u);
  EXPECT_EQ(config->scheduler.user_weights,
            (std::map<std::string, uint32_t>{{"alice", 4}, {"1001", 2}}));
  EXPECT_THAT(ParseConfig("[scheduler]\ndefault_weight = 0\n", "s.toml").status().message(),
              AllOf(HasSubstr("'scheduler.default_weight'"), HasSubstr("between 1 and 1000")));
  EXPECT_THAT(
      ParseConfig("[scheduler.user_weights]\nbob = 5000\n", "s.toml").status().message(),
      AllOf(HasSubstr("s.toml:2"), HasSubstr("scheduler.user_weights.bob = 5000"),
            HasSubstr("between 1 and 1000")));
  EXPECT_THAT(ParseConfig("[scheduler]\nuser_weights = 3\n", "s.toml").status().message(),
              HasSubstr("must be a table of user = weight"));
}

TEST(ConfigTest, CompilerSettings) {
  absl::StatusOr<DaemonConfig> defaults = ParseConfig("", "c.toml");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->compiler.compile_after_launches, 2u);
  EXPECT_EQ(defaults->compiler.python, "");  // found from the sim plugin's libtorch
  EXPECT_EQ(defaults->compiler.cache_dir, "");
  EXPECT_EQ(defaults->compiler.timeout_seconds, 600u);
  absl::StatusOr<DaemonConfig> config = ParseConfig(
      "[compiler]\ncompile_after_launches = 0\npython = \"/opt/py/bin/python\"\n"
      "worker = \"/opt/w.py\"\ncache_dir = \"/var/cache/x\"\nmax_cache_bytes = 1048576\n"
      "timeout_seconds = 30\nmax_worker_memory_bytes = 0\n",
      "c.toml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->compiler.compile_after_launches, 0u);
  EXPECT_EQ(config->compiler.python, "/opt/py/bin/python");
  EXPECT_EQ(config->compiler.worker, "/opt/w.py");
  EXPECT_EQ(config->compiler.cache_dir, "/var/cache/x");
  EXPECT_EQ(config->compiler.max_cache_bytes, 1u << 20);
  EXPECT_EQ(config->compiler.timeout_seconds, 30u);
  EXPECT_EQ(config->compiler.max_worker_memory_bytes, 0u);
  EXPECT_THAT(ParseConfig("[compiler]\ntimeout_seconds = 0\n", "c.toml").status().message(),
              AllOf(HasSubstr("c.toml:2"), HasSubstr("'compiler.timeout_seconds'")));
  EXPECT_THAT(ParseConfig("[compiler]\nmax_cache_bytes = 5\n", "c.toml").status().message(),
              HasSubstr("'compiler.max_cache_bytes'"));

  DaemonConfig overridden = *defaults;
  ASSERT_TRUE(ApplyOverrides(ConfigOverrides{.compiler_python = "/usr/bin/python3.11",
                                             .compiler_cache_dir = "/tmp/cc",
                                             .compile_after_launches = 7},
                             overridden)
                  .ok());
  EXPECT_EQ(overridden.compiler.python, "/usr/bin/python3.11");
  EXPECT_EQ(overridden.compiler.cache_dir, "/tmp/cc");
  EXPECT_EQ(overridden.compiler.compile_after_launches, 7u);
  EXPECT_THAT(ApplyOverrides(ConfigOverrides{.compile_after_launches = -1}, overridden).message(),
              HasSubstr("--compile-after-launches"));
}

TEST(ConfigTest, UnknownKeyNamesKeyFileAndKnownKeys) {
  absl::StatusOr<DaemonConfig> config = ParseConfig("[server]\nsockt = \"/x\"\n", "/etc/a.toml");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(),
              AllOf(HasSubstr("/etc/a.toml:2"), HasSubstr("'server.sockt'"),
                    HasSubstr("socket, socket_group")));
}

TEST(ConfigTest, UnknownSectionIsRefused) {
  absl::StatusOr<DaemonConfig> config = ParseConfig("[servr]\nsocket = \"/x\"\n", "b.toml");
  EXPECT_THAT(config.status().message(),
              AllOf(HasSubstr("b.toml:1"), HasSubstr("unknown section 'servr'"),
                    HasSubstr("server, log, device, sim")));
}

TEST(ConfigTest, TopLevelKeyIsRefused) {
  absl::StatusOr<DaemonConfig> config = ParseConfig("preset = \"dev\"\n", "c.toml");
  EXPECT_THAT(config.status().message(), HasSubstr("unknown section 'preset'"));
}

TEST(ConfigTest, WrongTypeNamesKeyValueAndFile) {
  absl::StatusOr<DaemonConfig> config =
      ParseConfig("[server]\nmax_message_bytes = \"64MiB\"\n", "/etc/d.toml");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(),
              AllOf(HasSubstr("/etc/d.toml:2"), HasSubstr("'server.max_message_bytes'"),
                    HasSubstr("must be an integer"), HasSubstr("\"64MiB\"")));
}

TEST(ConfigTest, SectionThatIsNotATableIsRefused) {
  absl::StatusOr<DaemonConfig> config = ParseConfig("sim = 3\n", "e.toml");
  EXPECT_THAT(config.status().message(), HasSubstr("'sim' must be a table"));
}

TEST(ConfigTest, UnknownPresetListsKnownOnes) {
  absl::StatusOr<DaemonConfig> config = ParseConfig("[sim]\npreset = \"trn9\"\n", "f.toml");
  EXPECT_THAT(config.status().message(),
              AllOf(HasSubstr("f.toml:2"), HasSubstr("\"trn9\""), HasSubstr("'sim.preset'"),
                    HasSubstr("dev, trn2.3xlarge, trn2.48xlarge, trn3")));
}

TEST(ConfigTest, BadValuesAreRefusedWithReason) {
  struct Case {
    std::string toml;
    std::string expected;
  };
  const Case cases[] = {
      {"[device]\nlogical_nc_config = 3\n", "must be 1 or 2"},
      {"[device]\nbackend = \"gpu\"\n", "must be \"sim\" or \"nrt\""},
      {"[device]\nnrt_visible_cores = \"all\"\n", "as NEURON_RT_VISIBLE_CORES does"},
      {"[device]\nnrt_sysfs_root = \"sys\"\n", "must be an absolute path"},
      {"[log]\nlevel = \"loud\"\n", "must be one of trace, debug, info"},
      {"[server]\nsocket = \"relative.sock\"\n", "must be an absolute path"},
      {"[server]\nsocket = \"/" + std::string(120, 'x') + "\"\n", "at most 107"},
      {"[server]\nmax_message_bytes = 10\n", "must be between"},
      {"[server]\nshutdown_timeout_ms = -1\n", "must be between 0 and"},
      {"[sim]\nparallel_launch_min_us = 2000000\n", "must be between 0 and 1000000"},
      {"[fabric]\nrecursive_doubling_max_bytes = -1\n", "must be between 0 and"},
  };
  for (const Case& test_case : cases) {
    absl::StatusOr<DaemonConfig> config = ParseConfig(test_case.toml, "g.toml");
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << test_case.toml;
    EXPECT_THAT(config.status().message(), AllOf(HasSubstr("g.toml:2"),
                                                 HasSubstr(test_case.expected)))
        << test_case.toml;
  }
}

TEST(ConfigTest, SyntaxErrorNamesFileAndLine) {
  absl::StatusOr<DaemonConfig> config = ParseConfig("[server]\nsocket = \n", "h.toml");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), AllOf(HasSubstr("h.toml:2"), HasSubstr("not valid TOML")));
}

TEST(ConfigTest, MissingFileIsNotFound) {
  testing::TempDir dir;
  absl::StatusOr<DaemonConfig> config = LoadConfigFile(dir.Join("absent.toml"));
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(config.status().message(), HasSubstr("absent.toml does not exist"));
}

TEST(ConfigTest, LoadsFileAndReportsItsPath) {
  testing::TempDir dir;
  const std::string good = dir.WriteFile("good.toml", "[sim]\npreset = \"trn3\"\n");
  absl::StatusOr<DaemonConfig> config = LoadConfigFile(good);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->sim.preset, "trn3");

  const std::string bad = dir.WriteFile("bad.toml", "[sim]\npreset = 7\n");
  EXPECT_THAT(LoadConfigFile(bad).status().message(), HasSubstr(bad + ":2"));
}

TEST(ConfigTest, FlagsOverrideTheFile) {
  absl::StatusOr<DaemonConfig> config =
      ParseConfig("[sim]\npreset = \"trn3\"\n[log]\nlevel = \"warn\"\n", "i.toml");
  ASSERT_TRUE(config.ok());
  ConfigOverrides overrides;
  overrides.sim_preset = "trn2.3xlarge";
  overrides.socket_path = "/tmp/x.sock";
  overrides.logical_nc_config = 1;
  overrides.device_backend = "nrt";
  overrides.nrt_library = "/tmp/libnrt.so.1";
  overrides.sim_plugin = "/tmp/libneuron_rtd_sim.so";
  overrides.fabric_provider = "tcp;ofi_rxm";
  overrides.fabric_interface = "lo";
  ASSERT_TRUE(ApplyOverrides(overrides, *config).ok());
  EXPECT_EQ(config->fabric.provider, "tcp;ofi_rxm");
  EXPECT_EQ(config->fabric.interface, "lo");
  EXPECT_EQ(config->device.backend, "nrt");
  EXPECT_EQ(config->device.nrt_library, "/tmp/libnrt.so.1");
  EXPECT_EQ(config->device.sim_plugin, "/tmp/libneuron_rtd_sim.so");
  EXPECT_EQ(config->sim.preset, "trn2.3xlarge");
  EXPECT_EQ(config->server.socket_path, "/tmp/x.sock");
  EXPECT_EQ(config->device.logical_nc_config, 1u);
  EXPECT_EQ(config->log.level, "warn");
}

TEST(ConfigTest, BadFlagValueNamesTheFlag) {
  DaemonConfig config;
  ConfigOverrides preset;
  preset.sim_preset = "trn9";
  EXPECT_THAT(ApplyOverrides(preset, config).message(),
              AllOf(HasSubstr("\"trn9\""), HasSubstr("--sim-preset"), HasSubstr("trn2.48xlarge")));
  ConfigOverrides lnc;
  lnc.logical_nc_config = 4;
  EXPECT_THAT(ApplyOverrides(lnc, config).message(),
              AllOf(HasSubstr("invalid value 4 for --logical-nc-config"), HasSubstr("1 or 2")));
  ConfigOverrides level;
  level.log_level = "chatty";
  EXPECT_THAT(ApplyOverrides(level, config).message(), HasSubstr("--log-level"));
}

TEST(ConfigTest, DefaultSocketDependsOnTheUser) {
  ServerConfig server;
  const std::string path = EffectiveSocketPath(server);
  if (::geteuid() == 0) {
    EXPECT_EQ(path, "/run/neuron-rtd/neuron-rtd.sock");
  } else {
    EXPECT_THAT(path, HasSubstr("neuron-rtd.sock"));
  }
  server.socket_path = "/tmp/explicit.sock";
  EXPECT_EQ(EffectiveSocketPath(server), "/tmp/explicit.sock");
}

}  // namespace
}  // namespace neuron::rtd

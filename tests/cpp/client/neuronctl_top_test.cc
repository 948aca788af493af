// `neuronctl top`'s frames, drawn from fixed snapshots: the text a person
// sees and the JSON a script reads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_split.h"
#include "client/neuronctl/top_frame.h"

namespace neuronctl {
namespace {

// Two devices of two cores; two sessions; one second after `Before()`.
TopSnapshot Now() {
  TopSnapshot snapshot;
  snapshot.monotonic_ns = 11'000'000'000;
  snapshot.unix_ms = 1'796'371'200'000;
  snapshot.target = "unix:/run/neuron-rtd/rtd.sock";
  snapshot.health = {.state = "serving",
                     .daemon_version = "0.1.0",
                     .daemon_pid = 42,
                     .uptime_ms = 3'723'000,
                     .backend = "hardware",
                     .device_count = 2,
                     .core_count = 4};
  snapshot.health.failed_cores[3] = "NRT_EXEC_UNIT_UNRECOVERABLE";
  snapshot.devices.resize(2);
  snapshot.devices[0].index = 0;
  snapshot.devices[0].cores = {0, 1};
  snapshot.devices[0].hbm_total_bytes = uint64_t{96} << 30;
  snapshot.devices[0].hbm_used_bytes = uint64_t{24} << 30;
  snapshot.devices[1].index = 1;
  snapshot.devices[1].cores = {2, 3};
  snapshot.devices[1].hbm_total_bytes = uint64_t{96} << 30;
  snapshot.cores = {
      {.core = 0, .utilization = 0.75, .executions_completed = 5000,
       .recent_compute_utilization = 0.5, .host_executed_launches = 100},
      {.core = 1, .executions_completed = 10},
      {.core = 2},
      {.core = 3, .executions_failed = 1},
  };
  neuronrt::SessionInfo idle{.session_id = 3, .owner = {.pid = 300, .uid = 1001},
                             .client_name = "notebook", .cores = {2}};
  neuronrt::SessionInfo busy{.session_id = 9, .owner = {.pid = 900, .uid = 1000},
                             .client_name = "train.py", .cores = {0, 1},
                             .hbm_used_bytes = uint64_t{24} << 30, .commands_completed = 4000,
                             .recent_core_share = 0.5, .queued_commands = 12};
  snapshot.sessions = {idle, busy};
  snapshot.user_names = {{1000, "alice"}};
  return snapshot;
}

TopSnapshot Before() {
  TopSnapshot snapshot = Now();
  snapshot.monotonic_ns -= 1'000'000'000;
  snapshot.cores[0].executions_completed = 3000;
  snapshot.cores[0].host_executed_launches = 40;
  snapshot.sessions[1].commands_completed = 2500;
  return snapshot;
}

TEST(NeuronctlTopTest, AFrameShowsCoresAndSessionsWithTheirRates) {
  const TopSnapshot before = Before();
  EXPECT_EQ(RenderTopFrame(Now(), &before, 0),
            "neuron-rtd 0.1.0 at unix:/run/neuron-rtd/rtd.sock: serving, hardware backend, up "
            "1:02:03, 2 session(s)\n"
            "core 3 FAILED: NRT_EXEC_UNIT_UNRECOVERABLE\n"
            "device 0  HBM [#####               ]  25%  24 GiB of 96 GiB\n"
            "device 1  HBM [                    ]   0%  0 B of 96 GiB\n"
            "\n"
            "CORE  DEVICE  BUSY (last second)           UTIL   CMD/S  HOST/S  FAILED\n"
            "0     0       [##########          ]  50%  75.0%  2000   60      0\n"
            "1     0       [                    ]   0%  0.0%   0      0       0\n"
            "2     1       [                    ]   0%  0.0%   0      0       0\n"
            "3     1       [                    ]   0%  0.0%   0      0       1\n"
            "\n"
            "SESSION  PID  USER   CLIENT    CORES  HBM     CMD/S  SHARE  QUEUED\n"
            "9        900  alice  train.py  0-1    24 GiB  1500   50%    12\n"
            "3        300  1001   notebook  2      0 B     0      0%     0\n");
}

TEST(NeuronctlTopTest, TheFirstFrameHasNoRatesAndLinesAreCutToTheTerminal) {
  const std::string frame = RenderTopFrame(Now(), nullptr, 40);
  EXPECT_THAT(frame, ::testing::HasSubstr("0     0       [##########          ]  50\n"));
  for (const auto line : absl::StrSplit(frame, '\n')) EXPECT_LE(line.size(), 40u);
  const std::string wide = RenderTopFrame(Now(), nullptr, 0);
  EXPECT_THAT(wide, ::testing::HasSubstr("75.0%  -      -       0\n"));
}

TEST(NeuronctlTopTest, JsonFramesCarryTheRatesOrNullBeforeThereAreTwo) {
  const TopSnapshot before = Before();
  const nlohmann::json frame = TopFrameJson(Now(), &before);
  EXPECT_EQ(frame["time_unix_ms"], 1'796'371'200'000);
  EXPECT_EQ(frame["daemon"]["failed_cores"][0]["core"], 3);
  EXPECT_EQ(frame["cores"][0]["commands_per_s"], 2000.0);
  EXPECT_EQ(frame["cores"][0]["host_launches_per_s"], 60.0);
  EXPECT_EQ(frame["cores"][3]["device"], 1);
  EXPECT_EQ(frame["sessions"][0]["session_id"], 9);
  EXPECT_EQ(frame["sessions"][0]["user"], "alice");
  EXPECT_EQ(frame["sessions"][0]["commands_per_s"], 1500.0);
  EXPECT_EQ(frame["devices"][0]["hbm_used_bytes"], uint64_t{24} << 30);
  EXPECT_TRUE(TopFrameJson(Now(), nullptr)["cores"][0]["commands_per_s"].is_null());
}

TEST(NeuronctlTopTest, ACounterThatWentBackShowsNoRate) {
  TopSnapshot before = Before();
  before.cores[0].executions_completed = 999'999;  // the daemon restarted
  EXPECT_TRUE(TopFrameJson(Now(), &before)["cores"][0]["commands_per_s"].is_null());
}

}  // namespace
}  // namespace neuronctl

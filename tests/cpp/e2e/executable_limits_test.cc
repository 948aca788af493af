// What executables can make the daemon hold, seen by clients: sessions hold
// what they load, can launch only what they hold, unload it, and a full
// cache evicts what no live session holds (neuronctl shows it and clears
// it); a launch's CPU kernels are bounded in host memory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "e2e/eager_op_builders.h"
#include "nlohmann/json.hpp"
#include "neuronrt/client.h"
#include "neuronrt/session.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace neuron {
namespace {

using ::testing::HasSubstr;
using testing::NegBody;

class ExecutableLimitsTest : public ::testing::Test {
 protected:
  void StartDaemon(const std::string& config_toml = "") {
    socket_ = dir_.Join("rtd.sock");
    std::vector<std::string> args = {"--socket", socket_};
    if (!config_toml.empty()) {
      args.push_back("--config");
      args.push_back(dir_.WriteFile("rtd.toml", config_toml));
    }
    auto daemon = testing::StartDaemon(args);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = *std::move(daemon);
  }

  std::unique_ptr<neuronrt::Session> OpenSession() {
    auto session = neuronrt::Session::Open({.client = {.address = "unix:" + socket_}});
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? *std::move(session) : nullptr;
  }

  nlohmann::json Neuronctl(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {testing::NeuronctlBinary(), "--address", "unix:" + socket_};
    argv.insert(argv.end(), args.begin(), args.end());
    testing::CommandResult result = testing::RunCommand(argv);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return nlohmann::json::parse(result.out, nullptr, /*allow_exceptions=*/false);
  }

  testing::TempDir dir_;
  std::string socket_;
  std::unique_ptr<testing::Subprocess> daemon_;
};

TEST_F(ExecutableLimitsTest, ASessionLaunchesOnlyWhatItHolds) {
  StartDaemon();
  auto owner = OpenSession();
  auto other = OpenSession();
  ASSERT_TRUE(owner && other);
  const uint64_t id = *owner->LoadExecutable(NegBody(4));
  auto buffer = *other->Allocate(0, 4096);
  const uint64_t addresses[] = {buffer.device_address, buffer.device_address + 1024};
  // The id is host-wide, but `other` never looked it up.
  auto stream = *other->CreateStream(0);
  ASSERT_TRUE(stream->Launch(id, addresses, {}).ok());
  EXPECT_THAT(stream->Synchronize().message(),
              HasSubstr(absl::StrFormat("executable %d is not loaded in this session", id)));
  // Once it has, it may.
  EXPECT_EQ(*other->LoadExecutable(NegBody(4)), id);
  auto fresh = *other->CreateStream(0);
  ASSERT_TRUE(fresh->Launch(id, addresses, {}).ok());
  EXPECT_TRUE(fresh->Synchronize().ok());
}

TEST_F(ExecutableLimitsTest, AnUnloadedExecutableCannotBeLaunched) {
  StartDaemon();
  auto session = OpenSession();
  ASSERT_TRUE(session);
  const uint64_t id = *session->LoadExecutable(NegBody(4));
  auto buffer = *session->Allocate(0, 4096);
  const uint64_t addresses[] = {buffer.device_address, buffer.device_address + 1024};
  auto stream = *session->CreateStream(0);
  ASSERT_TRUE(stream->Launch(id, addresses, {}).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(Neuronctl({"ps", "--json"})["sessions"][0]["executables"], 1);

  ASSERT_TRUE(session->UnloadExecutable(id).ok());
  absl::Status again = session->UnloadExecutable(id);
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(again.message(), HasSubstr(absl::StrFormat("holds no executable %d", id)));
  EXPECT_EQ(Neuronctl({"ps", "--json"})["sessions"][0]["executables"], 0);
  const nlohmann::json cache = Neuronctl({"cache", "--json"});
  EXPECT_EQ(cache["entries"], 1);
  EXPECT_EQ(cache["held_entries"], 0);

  ASSERT_TRUE(stream->Launch(id, addresses, {}).ok());
  EXPECT_THAT(stream->Synchronize().message(), HasSubstr("is not loaded in this session"));
}

TEST_F(ExecutableLimitsTest, AFullCacheEvictsWhatNoLiveSessionHolds) {
  // 1 MiB: about 250 eager ops of ~4 KiB charged each.
  StartDaemon("[executables]\nmax_cache_bytes = 1048576\n");
  int loaded = 0;
  {
    auto first = OpenSession();
    ASSERT_TRUE(first);
    absl::Status refused;
    for (int size = 1; size <= 400; ++size) {
      absl::StatusOr<uint64_t> id = first->LoadExecutable(NegBody(size));
      if (!id.ok()) {
        refused = id.status();
        break;
      }
      ++loaded;
    }
    // All of them held by a live session: nothing may go.
    EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(refused.message(), HasSubstr("max_cache_bytes = 1048576"));
    EXPECT_GT(loaded, 100);
    EXPECT_EQ(Neuronctl({"cache", "--json"})["held_entries"], loaded);
  }
  // The first session has ended: its executables stay cached, unheld.
  nlohmann::json cache = Neuronctl({"cache", "--json"});
  EXPECT_EQ(cache["entries"], loaded);
  EXPECT_EQ(cache["held_entries"], 0);
  EXPECT_EQ(cache["held_bytes"], 0);

  auto second = OpenSession();
  ASSERT_TRUE(second);
  for (int size = 1001; size < 1001 + loaded; ++size) {
    absl::StatusOr<uint64_t> id = second->LoadExecutable(NegBody(size));
    ASSERT_TRUE(id.ok()) << "load " << size - 1000 << ": " << id.status();
  }
  cache = Neuronctl({"cache", "--json"});
  EXPECT_GE(cache["evictions"], loaded - 1);
  EXPECT_EQ(cache["held_entries"], loaded);
  EXPECT_LE(cache["memory_bytes"], 1048576);
}

TEST_F(ExecutableLimitsTest, EachUserHoldsAtMostItsQuota) {
  StartDaemon("[executables]\nmax_bytes_per_user = 1048576\n");
  auto session = OpenSession();
  ASSERT_TRUE(session);
  std::vector<uint64_t> ids;
  absl::Status refused;
  for (int size = 1; size <= 400; ++size) {
    absl::StatusOr<uint64_t> id = session->LoadExecutable(NegBody(size));
    if (!id.ok()) {
      refused = id.status();
      break;
    }
    ids.push_back(*id);
  }
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), HasSubstr("max_bytes_per_user = 1048576"));
  // Another session of the same user shares the quota.
  auto second = OpenSession();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->LoadExecutable(NegBody(999)).status().code(),
            absl::StatusCode::kResourceExhausted);
  // Unloading makes room.
  ASSERT_TRUE(session->UnloadExecutable(ids.back()).ok());
  EXPECT_TRUE(second->LoadExecutable(NegBody(999)).ok());
}

TEST_F(ExecutableLimitsTest, NeuronctlClearsWhatNoSessionHolds) {
  StartDaemon();
  auto session = OpenSession();
  ASSERT_TRUE(session);
  const uint64_t kept = *session->LoadExecutable(NegBody(1));
  for (int size = 2; size <= 4; ++size) {
    ASSERT_TRUE(session->UnloadExecutable(*session->LoadExecutable(NegBody(size))).ok());
  }
  testing::CommandResult cleared = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", "unix:" + socket_, "cache", "clear"});
  EXPECT_EQ(cleared.exit_code, 0) << cleared.err;
  EXPECT_THAT(cleared.out, HasSubstr("3 executable(s) evicted"));
  const nlohmann::json cache = Neuronctl({"cache", "--json"});
  EXPECT_EQ(cache["entries"], 1);
  EXPECT_EQ(cache["evictions"], 3);
  EXPECT_EQ(cache["max_bytes"], 1073741824);
  EXPECT_EQ(cache["max_bytes_per_user"], 536870912);
  testing::CommandResult text = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", "unix:" + socket_, "cache"});
  EXPECT_THAT(text.out, HasSubstr("executables  1 (1 held by live sessions)"));
  EXPECT_EQ(*session->LoadExecutable(NegBody(1)), kept);
}

TEST_F(ExecutableLimitsTest, AKernelAskingForTooMuchHostMemoryFailsOnlyItsCommand) {
  StartDaemon("[sim]\nmax_launch_host_bytes = 1048576\n");
  auto session = OpenSession();
  ASSERT_TRUE(session);
  constexpr int64_t kLarge = 512 << 10;  // floats: a 2 MiB result
  auto buffer = *session->Allocate(0, 2 * kLarge * 4);
  const uint64_t addresses[] = {buffer.device_address, buffer.device_address + kLarge * 4};
  const uint64_t large = *session->LoadExecutable(NegBody(kLarge));
  const uint64_t small = *session->LoadExecutable(NegBody(4));
  auto stream = *session->CreateStream(0);
  ASSERT_TRUE(stream->Launch(large, addresses, {}).ok());
  absl::Status refused = stream->Synchronize();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), HasSubstr("[sim] max_launch_host_bytes"));
  EXPECT_EQ(refused.GetPayload(neuronrt::kOperatorErrorTypePayload).value_or(absl::Cord()),
            "OutOfMemoryError");
  // An operator error: the stream goes on.
  ASSERT_TRUE(stream->Launch(small, addresses, {}).ok());
  EXPECT_TRUE(stream->Synchronize().ok());
}

}  // namespace
}  // namespace neuron

// Chaos: clients killed at random points of their calls and ring writes,
// the daemon killed under waiting clients, one session taking all HBM.
// After each, nothing may have leaked (sessions, HBM, file descriptors,
// executables held), as neuronctl reports it, and a bystander session of
// this process keeps working throughout.
//
// NEURON_CHAOS_REPETITIONS sets the repetitions of each test (default 5;
// `deploy/dev.sh chaos` runs 100).
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "e2e/eager_op_builders.h"
#include "neuronrt/session.h"
#include "nlohmann/json.hpp"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace neuron {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1 << 20;

int Repetitions() {
  const char* value = std::getenv("NEURON_CHAOS_REPETITIONS");
  return value != nullptr ? std::max(1, std::atoi(value)) : 5;
}

std::string ChaosClientBinary() { return NEURON_CHAOS_CLIENT_BINARY; }

// What each descriptor of `pid` is ("socket:[123]", "/dev/shm/...", "anon_inode:[eventfd]").
std::string DescribeFileDescriptors(pid_t pid) {
  const std::string dir_path = absl::StrCat("/proc/", pid, "/fd");
  DIR* dir = ::opendir(dir_path.c_str());
  if (dir == nullptr) return "";
  std::string described;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    char target[256] = {};
    const std::string link = absl::StrCat(dir_path, "/", entry->d_name);
    if (::readlink(link.c_str(), target, sizeof(target) - 1) < 0) continue;
    absl::StrAppend(&described, " ", entry->d_name, "=", target);
  }
  ::closedir(dir);
  return described;
}

int OpenFileDescriptors(pid_t pid) {
  DIR* dir = ::opendir(absl::StrCat("/proc/", pid, "/fd").c_str());
  if (dir == nullptr) return -1;
  int count = 0;
  while (const dirent* entry = ::readdir(dir)) count += entry->d_name[0] != '.';
  ::closedir(dir);
  return count;
}

class ChaosTest : public ::testing::Test {
 protected:
  void StartDaemon(const std::string& extra_config = "") {
    socket_ = dir_.Join("rtd.sock");
    // A client killed between OpenSession and attaching its data plane
    // leaves a session only until the attach timeout.
    const std::string config =
        dir_.WriteFile("rtd.toml", "[session]\nattach_timeout_ms = 300\n" + extra_config);
    auto daemon = testing::StartDaemon({"--socket", socket_, "--config", config});
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = *std::move(daemon);
  }

  std::string address() const { return "unix:" + socket_; }

  std::unique_ptr<neuronrt::Session> Open(const std::string& name) {
    auto session = neuronrt::Session::Open({.client = {.address = address()}, .client_name = name});
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? *std::move(session) : nullptr;
  }

  nlohmann::json Neuronctl(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {testing::NeuronctlBinary(), "--address", address()};
    argv.insert(argv.end(), args.begin(), args.end());
    testing::CommandResult result = testing::RunCommand(argv);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return nlohmann::json::parse(result.out, nullptr, /*allow_exceptions=*/false);
  }

  struct Usage {
    size_t sessions = 0;
    uint64_t hbm_used_bytes = 0;
    uint64_t executables_held = 0;
    int file_descriptors = 0;
    // gRPC's own descriptors come and go: more than the baseline is a leak.
    bool Within(const Usage& baseline) const {
      return sessions == baseline.sessions && hbm_used_bytes == baseline.hbm_used_bytes &&
             executables_held == baseline.executables_held &&
             file_descriptors <= baseline.file_descriptors;
    }
  };

  Usage Measure() {
    Usage usage;
    usage.sessions = Neuronctl({"ps", "--json"})["sessions"].size();
    const nlohmann::json listed = Neuronctl({"ls", "--json"});
    for (const auto& device : listed["devices"]) {
      usage.hbm_used_bytes += device["hbm_used_bytes"].get<uint64_t>();
    }
    usage.executables_held = Neuronctl({"cache", "--json"})["held_entries"].get<uint64_t>();
    usage.file_descriptors = OpenFileDescriptors(daemon_->pid());
    return usage;
  }

  static std::string Describe(const Usage& usage) {
    return absl::StrCat(usage.sessions, " sessions, ", usage.hbm_used_bytes, " bytes of HBM, ",
                        usage.executables_held, " executables held, ", usage.file_descriptors,
                        " file descriptors");
  }

  // Waits until the daemon has let go of everything dead clients held: it
  // learns of a death from a closed connection, asynchronously.
  void ExpectBackTo(const Usage& baseline) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    Usage now = Measure();
    while (!now.Within(baseline) && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(20));
      now = Measure();
    }
    EXPECT_TRUE(now.Within(baseline))
        << "now " << Describe(now) << "; at most " << Describe(baseline)
        << "\ndescriptors:" << DescribeFileDescriptors(daemon_->pid());
  }

  // The bystander's own work, checked: it must go on whatever others do.
  void BystanderRoundTrip(neuronrt::Session& session, const neuronrt::DeviceBuffer& buffer,
                          uint64_t executable, neuronrt::Stream& stream, uint32_t round) {
    std::vector<float> input(64), output(64);
    for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(i + round);
    ASSERT_TRUE(stream.CopyToDevice(buffer.device_address, input.data(), 256).ok());
    const uint64_t addresses[] = {buffer.device_address, buffer.device_address + 256};
    ASSERT_TRUE(stream.Launch(executable, addresses, {}).ok());
    ASSERT_TRUE(stream.CopyToHost(output.data(), buffer.device_address + 256, 256).ok());
    for (size_t i = 0; i < input.size(); ++i) ASSERT_EQ(output[i], -input[i]) << "round " << round;
    (void)session;
  }

  testing::TempDir dir_;
  std::string socket_;
  std::unique_ptr<testing::Subprocess> daemon_;
};

TEST_F(ChaosTest, ClientsKilledAnywhereLeakNothing) {
  StartDaemon();
  auto bystander = Open("bystander");
  ASSERT_TRUE(bystander);
  auto buffer = *bystander->Allocate(0, 1 * kMiB);
  const uint64_t neg = *bystander->LoadExecutable(testing::NegBody(64));
  auto stream = *bystander->CreateStream(0);
  // One client run to the end first: the daemon's lazily made threads and
  // descriptors are part of the baseline.
  {
    auto warm_up = testing::Subprocess::Spawn(
        {ChaosClientBinary(), "random", address(), "1", "-1"});
    ASSERT_TRUE(warm_up.ok());
    ASSERT_EQ(*(*warm_up)->Wait(absl::Seconds(120)), 0) << (*warm_up)->Stderr();
  }
  const Usage baseline{.sessions = 1,
                       .hbm_used_bytes = buffer.size,
                       .executables_held = 1,
                       .file_descriptors = OpenFileDescriptors(daemon_->pid())};
  ExpectBackTo(baseline);

  std::mt19937_64 random(20261201);
  constexpr int kClients = 3;
  for (int repetition = 0; repetition < Repetitions(); ++repetition) {
    SCOPED_TRACE(absl::StrCat("repetition ", repetition));
    std::vector<std::unique_ptr<testing::Subprocess>> clients;
    std::vector<int> how;
    for (int i = 0; i < kClients; ++i) {
      // 0: kills itself before a random step; 1: killed from outside at a
      // random moment (inside a call, a copy, a ring write); 2: finishes.
      how.push_back(static_cast<int>(random() % 3));
      const int64_t die_at = how.back() == 0 ? static_cast<int64_t>(random() % 200) : -1;
      auto client = testing::Subprocess::Spawn(
          {ChaosClientBinary(), "random", address(), std::to_string(repetition * kClients + i + 2),
           std::to_string(die_at)});
      ASSERT_TRUE(client.ok()) << client.status();
      clients.push_back(*std::move(client));
    }
    absl::SleepFor(absl::Microseconds(random() % 300'000));
    for (int i = 0; i < kClients; ++i) {
      if (how[i] == 1) clients[i]->Signal(SIGKILL);
    }
    for (int i = 0; i < kClients; ++i) {
      absl::StatusOr<int> code = clients[i]->Wait(absl::Seconds(120));
      ASSERT_TRUE(code.ok()) << code.status();
      // A client may finish before its kill lands; none may fail.
      EXPECT_TRUE(*code == 0 || *code == 128 + SIGKILL) << "client " << i << " exited " << *code
                                                          << ": " << clients[i]->Stderr();
    }
    BystanderRoundTrip(*bystander, buffer, neg, *stream, static_cast<uint32_t>(repetition));
    ExpectBackTo(baseline);
    if (::testing::Test::HasFailure()) break;
  }
}

TEST_F(ChaosTest, ADaemonKilledUnderWaitingClientsEndsTheirWaitsWithinTwoSeconds) {
  const std::vector<std::string> kinds = {"sync", "ring", "event", "rpc"};
  for (int repetition = 0; repetition < Repetitions(); ++repetition) {
    SCOPED_TRACE(absl::StrCat("repetition ", repetition));
    StartDaemon();
    std::vector<std::unique_ptr<testing::Subprocess>> clients;
    for (const std::string& kind : kinds) {
      auto client = testing::Subprocess::Spawn({ChaosClientBinary(), "wait", address(), kind});
      ASSERT_TRUE(client.ok()) << client.status();
      ASSERT_TRUE((*client)->WaitReady().ok()) << kind << ": " << (*client)->Stderr();
      clients.push_back(*std::move(client));
    }
    daemon_->Signal(SIGKILL);
    ASSERT_TRUE(daemon_->Wait().ok());
    const absl::Time killed = absl::Now();
    for (size_t i = 0; i < clients.size(); ++i) {
      // Measured from the daemon's death: each client's own deadline.
      absl::StatusOr<int> code =
          clients[i]->Wait(std::max(absl::ZeroDuration(), killed + absl::Seconds(2) - absl::Now()));
      ASSERT_TRUE(code.ok()) << kinds[i] << ": still blocked 2 s after the daemon died";
      EXPECT_EQ(*code, 3) << kinds[i] << ": " << clients[i]->Stderr();
      EXPECT_THAT(clients[i]->Stderr(), HasSubstr("chaos_client: ")) << kinds[i];
    }
    if (::testing::Test::HasFailure()) break;
  }
}

TEST_F(ChaosTest, ASessionTakingAllHbmDoesNotStopAnother) {
  StartDaemon();
  auto bystander = Open("bystander");
  ASSERT_TRUE(bystander);
  auto buffer = *bystander->Allocate(0, 1 * kMiB);
  const uint64_t neg = *bystander->LoadExecutable(testing::NegBody(64));
  auto stream = *bystander->CreateStream(0);
  const Usage baseline = Measure();
  for (int repetition = 0; repetition < Repetitions(); ++repetition) {
    SCOPED_TRACE(absl::StrCat("repetition ", repetition));
    auto hog = testing::Subprocess::Spawn({ChaosClientBinary(), "hog", address()});
    ASSERT_TRUE(hog.ok());
    ASSERT_TRUE((*hog)->WaitReady().ok()) << (*hog)->Stderr();
    // What the bystander holds keeps working; what it asks for more gets a
    // clear refusal, not a hang or a crash.
    BystanderRoundTrip(*bystander, buffer, neg, *stream, static_cast<uint32_t>(repetition));
    absl::StatusOr<neuronrt::DeviceBuffer> more = bystander->Allocate(0, 64 * kMiB);
    EXPECT_EQ(more.status().code(), absl::StatusCode::kResourceExhausted) << more.status();
    (*hog)->Signal(SIGKILL);
    ASSERT_TRUE((*hog)->Wait().ok());
    ExpectBackTo(baseline);
    more = bystander->Allocate(0, 64 * kMiB);
    ASSERT_TRUE(more.ok()) << more.status();
    ASSERT_TRUE(bystander->Free(*more).ok());
    if (::testing::Test::HasFailure()) break;
  }
}

TEST_F(ChaosTest, ASessionQuotaKeepsHbmForOthers) {
  StartDaemon("max_hbm_bytes = 1073741824\n");
  auto hog = testing::Subprocess::Spawn({ChaosClientBinary(), "hog", address()});
  ASSERT_TRUE(hog.ok());
  ASSERT_TRUE((*hog)->WaitReady().ok()) << (*hog)->Stderr();
  EXPECT_LE(std::stoull((*hog)->Stdout()), 1ull << 30);
  auto bystander = Open("bystander");
  ASSERT_TRUE(bystander);
  EXPECT_TRUE(bystander->Allocate(0, 512 * kMiB).ok());
}

}  // namespace
}  // namespace neuron

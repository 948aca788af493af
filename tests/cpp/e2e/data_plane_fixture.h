// The fixture of the data-plane suites (data_plane_test.cc,
// hostile_client_test.cc): a daemon of the test's own on a private socket.
#ifndef NEURON_TESTS_E2E_DATA_PLANE_FIXTURE_H_
#define NEURON_TESTS_E2E_DATA_PLANE_FIXTURE_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "neuronrt/session.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace neuron {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;

inline std::vector<uint8_t> Pattern(size_t bytes, uint32_t seed) {
  std::vector<uint8_t> data(bytes);
  uint32_t state = seed * 2654435761u + 1;
  for (uint8_t& byte : data) {
    state = state * 1664525u + 1013904223u;
    byte = static_cast<uint8_t>(state >> 24);
  }
  return data;
}

class DataPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override { StartDaemon({}); }

  void StartDaemon(std::vector<std::string> args) {
    daemon_.reset();
    socket_ = dir_.Join("rtd.sock");
    args.insert(args.end(), {"--socket", socket_});
    auto daemon = testing::StartDaemon(args);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = *std::move(daemon);
  }

  std::string address() const { return "unix:" + socket_; }

  std::unique_ptr<neuronrt::Session> Open(std::string name = "test") {
    auto session = neuronrt::Session::Open({.client = {.address = address()}, .client_name = name});
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? *std::move(session) : nullptr;
  }

  std::unique_ptr<neuronrt::Client> Admin() {
    return *neuronrt::Client::Connect({.address = address()});
  }

  // Waits until the daemon lists no session of `pid`. The daemon acts on a
  // client's death asynchronously; the condition, not a delay, ends the wait.
  bool WaitSessionGone(pid_t pid) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    auto admin = Admin();
    while (absl::Now() < deadline) {
      auto sessions = admin->ListSessions();
      if (sessions.ok() && std::none_of(sessions->begin(), sessions->end(), [&](const auto& s) {
            return s.owner.pid == pid;
          })) {
        return true;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }

  // Commands that were running when a session ended still hold their
  // segments until they finish; the memory comes back right after.
  bool WaitHbmUsed(uint64_t expected) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      if (HbmUsed() == expected) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }

  uint64_t HbmUsed() {
    auto devices = Admin()->ListDevices();
    uint64_t used = 0;
    for (const auto& device : *devices) used += device.hbm_used_bytes;
    return used;
  }

  testing::TempDir dir_;
  std::string socket_;
  std::unique_ptr<testing::Subprocess> daemon_;
};

}  // namespace neuron

#endif  // NEURON_TESTS_E2E_DATA_PLANE_FIXTURE_H_

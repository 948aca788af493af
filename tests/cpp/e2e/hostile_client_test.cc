// What a hostile or careless client can try against the data plane, against
// a real daemon: malformed records, a lost ring framing, expired waits,
// wrong attach tokens, quotas and per-user admission under concurrent callers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "e2e/data_plane_fixture.h"
#include "e2e/raw_session.h"
#include "neuronrt/session.h"
#include "testing/unix_socket.h"

namespace neuron {
namespace {

using ::testing::HasSubstr;

TEST_F(DataPlaneTest, MalformedRecordsAreRefusedAndTheDaemonKeepsServing) {
  auto raw = testing::RawSession::Open(address());
  ASSERT_TRUE(raw.ok()) << raw.status();
  auto address_of = (*raw)->Allocate(0, kMiB);
  ASSERT_TRUE(address_of.ok());
  struct Case {
    const char* name;
    std::function<void(testing::RawStream&)> write;
    const char* expected;
  };
  neuron_rtd_copy_payload copy{
      .src = {.kind = NEURON_RTD_LOCATION_STAGING, .reserved0 = 0, .memory_id = 0, .address = 0},
      .dst = {.kind = NEURON_RTD_LOCATION_DEVICE, .reserved0 = 0, .memory_id = 0,
              .address = *address_of},
      .bytes = 64};
  auto bytes = [](const auto& value) {
    return std::span(reinterpret_cast<const uint8_t*>(&value), sizeof(value));
  };
  const std::vector<Case> cases = {
      {"unknown opcode",
       [&](auto& s) { s.Write(testing::MakeRecord(77, {}, 1)); }, "opcode 77 is not known"},
      {"bad length",
       [&](auto& s) {
         auto record = testing::MakeRecord(NEURON_RTD_OP_SIGNAL, {}, 1);
         reinterpret_cast<neuron_rtd_record_header*>(record.data())->length = 40;
         s.Write(record);
       },
       "not a multiple of 32"},
      {"unknown flags",
       [&](auto& s) {
         auto record = testing::MakeRecord(NEURON_RTD_OP_SIGNAL, {}, 1);
         reinterpret_cast<neuron_rtd_record_header*>(record.data())->flags = 0x100;
         s.Write(record);
       },
       "unknown bits"},
      {"sequence going back",
       [&](auto& s) {
         s.Write(testing::MakeRecord(NEURON_RTD_OP_SIGNAL, {}, 5));
         s.Write(testing::MakeRecord(NEURON_RTD_OP_SIGNAL, {}, 5));
       },
       "does not follow"},
      {"payload size",
       [&](auto& s) {
         s.Write(testing::MakeRecord(NEURON_RTD_OP_COPY, bytes(copy).subspan(0, 40), 1));
       },
       "COPY takes 56"},
      {"staging out of range",
       [&](auto& s) {
         neuron_rtd_copy_payload far = copy;
         far.src.address = uint64_t{1} << 40;
         s.Write(testing::MakeRecord(NEURON_RTD_OP_COPY, bytes(far), 1));
       },
       "outside the"},
      {"unregistered host memory",
       [&](auto& s) {
         neuron_rtd_copy_payload host = copy;
         host.src = {.kind = NEURON_RTD_LOCATION_HOST_MEMORY, .reserved0 = 0, .memory_id = 999,
                     .address = 0};
         s.Write(testing::MakeRecord(NEURON_RTD_OP_COPY, bytes(host), 1));
       },
       "host memory 999 is not registered"},
      {"wild device address",
       [&](auto& s) {
         neuron_rtd_fill_payload fill{.device_address = 0x1000, .bytes = 8, .pattern = 0,
                                      .pattern_bytes = 1};
         s.Write(testing::MakeRecord(NEURON_RTD_OP_FILL, bytes(fill), 1));
       },
       "not inside any segment"},
      {"wait on a missing stream",
       [&](auto& s) {
         neuron_rtd_wait_payload wait{.stream_id = 4242, .value = 1};
         s.Write(testing::MakeRecord(NEURON_RTD_OP_WAIT, bytes(wait), 1));
       },
       "does not have"},
      {"tail beyond the ring",
       [&](auto& s) { s.PublishTail(uint64_t{1} << 40); }, "not a record boundary"},
      {"record across the ring's end",
       [&](auto& s) {
         auto filler = testing::MakeRecord(NEURON_RTD_OP_SIGNAL, {}, 0);
         uint64_t sequence = 0;
         for (uint64_t written = 0; written + 64 < s.capacity(); written += filler.size()) {
           reinterpret_cast<neuron_rtd_record_header*>(filler.data())->sequence = ++sequence;
           s.Write(filler);
         }
         // Once the daemon has consumed the fillers, 64 bytes are left before
         // the end of the ring: a 128-byte record there must have been padded.
         ASSERT_FALSE(*s.WaitFailedOrCompleted(sequence));
         s.Write(testing::MakeRecord(NEURON_RTD_OP_COPY, bytes(copy), sequence + 1));
       },
       "past the end of the ring"},
  };
  auto healthy = (*raw)->CreateStream(1);
  ASSERT_TRUE(healthy.ok());
  uint64_t healthy_sequence = 0;
  for (const Case& test_case : cases) {
    auto stream = (*raw)->CreateStream(0);
    ASSERT_TRUE(stream.ok()) << test_case.name;
    test_case.write(**stream);
    absl::StatusOr<bool> failed = (*stream)->WaitFailedOrCompleted(UINT64_MAX);
    ASSERT_TRUE(failed.ok()) << test_case.name;
    EXPECT_TRUE(*failed) << test_case.name;
    auto errors = (*raw)->Errors((*stream)->id());
    ASSERT_EQ(errors.size(), 1u) << test_case.name;
    EXPECT_THAT(errors[0].message(), HasSubstr(test_case.expected)) << test_case.name;

    // The daemon, the session and its other streams keep working.
    ++healthy_sequence;
    (*healthy)->Write(testing::MakeRecord(NEURON_RTD_OP_SIGNAL, {}, healthy_sequence));
    absl::StatusOr<bool> healthy_failed = (*healthy)->WaitFailedOrCompleted(healthy_sequence);
    ASSERT_TRUE(healthy_failed.ok());
    EXPECT_FALSE(*healthy_failed) << "after " << test_case.name;
  }
  EXPECT_TRUE(Admin()->Health().ok());
}

// CPU time (user + system) the process has used, from /proc/PID/stat.
absl::Duration ProcessCpuTime(pid_t pid) {
  std::ifstream stat(absl::StrFormat("/proc/%d/stat", pid));
  std::string line;
  std::getline(stat, line);
  // Fields after the command name, which is in parentheses and may hold
  // spaces: state is field 3, utime and stime fields 14 and 15.
  std::istringstream fields(line.substr(line.rfind(')') + 2));
  std::string field;
  uint64_t ticks = 0;
  for (int index = 3; index <= 15 && fields >> field; ++index) {
    if (index >= 14) ticks += std::stoull(field);
  }
  return absl::Seconds(static_cast<double>(ticks) / static_cast<double>(::sysconf(_SC_CLK_TCK)));
}

TEST_F(DataPlaneTest, AStreamWhoseFramingIsLostIsNoLongerPolled) {
  auto raw = testing::RawSession::Open(address());
  ASSERT_TRUE(raw.ok()) << raw.status();
  auto stream = (*raw)->CreateStream(0);
  ASSERT_TRUE(stream.ok());
  (*stream)->PublishTail(uint64_t{1} << 40);
  absl::StatusOr<bool> failed = (*stream)->WaitFailedOrCompleted(UINT64_MAX);
  ASSERT_TRUE(failed.ok());
  ASSERT_TRUE(*failed);
  // The worker polled that ring forever before, burning a core; a window of
  // wall time shows whether it still does (an idle daemon uses a few ms).
  const absl::Duration before = ProcessCpuTime(daemon_->pid());
  const absl::Time start = absl::Now();
  absl::SleepFor(absl::Milliseconds(500));
  const absl::Duration used = ProcessCpuTime(daemon_->pid()) - before;
  const absl::Duration window = absl::Now() - start;
  EXPECT_LT(used, window / 4) << "the daemon used " << used << " of CPU in " << window;

  // The session's other streams still run.
  auto healthy = (*raw)->CreateStream(0);
  ASSERT_TRUE(healthy.ok());
  (*healthy)->Write(testing::MakeRecord(NEURON_RTD_OP_SIGNAL, {}, 1));
  absl::StatusOr<bool> healthy_failed = (*healthy)->WaitFailedOrCompleted(1);
  ASSERT_TRUE(healthy_failed.ok());
  EXPECT_FALSE(*healthy_failed);
}

// A deadline already past once made poll() wait forever.
TEST_F(DataPlaneTest, AnExpiredDeadlineDoesNotBlock) {
  auto raw = testing::RawSession::Open(address());
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ((*raw)->WaitForRegion(424242, -absl::Seconds(1)).code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST_F(DataPlaneTest, WrongAttachTokenIsRefused) {
  auto raw = testing::RawSession::Open(address());
  ASSERT_TRUE(raw.ok());
  auto impostor = neuronrt::internal::DataPlaneConnection::Attach(
      "unix:" + socket_ + ".data", (*raw)->id(), std::string(32, 'x'));
  ASSERT_TRUE(impostor.ok());
  auto region = (*impostor)->Receive(1, 1, absl::Seconds(30));
  EXPECT_EQ(region.status().code(), absl::StatusCode::kPermissionDenied) << region.status();
}

TEST_F(DataPlaneTest, SessionQuotasComeFromTheConfig) {
  const std::string config = dir_.WriteFile(
      "rtd.toml",
      "[session]\nmax_hbm_bytes = 2097152\nmax_streams = 2\nmax_ring_bytes = 65536\n"
      "max_host_memory_bytes = 1048576\n");
  StartDaemon({"--config", config});
  auto session = *neuronrt::Session::Open({.client = {.address = address()}, .ring_bytes = 4096});
  ASSERT_TRUE(session->Allocate(0, kMiB).ok());
  auto over = session->Allocate(0, 2 * kMiB);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(over.status().message(), HasSubstr("HBM quota"));
  auto first = session->CreateStream(0);
  auto second = session->CreateStream(1);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_THAT(session->CreateStream(0).status().message(), HasSubstr("has 2 streams, its limit"));
  EXPECT_EQ(session->AllocateHost(2 * kMiB).status().code(),
            absl::StatusCode::kResourceExhausted);
  auto big_ring = neuronrt::Session::Open(
      {.client = {.address = address()}, .ring_bytes = 1 << 20});
  ASSERT_TRUE(big_ring.ok());
  EXPECT_THAT((*big_ring)->CreateStream(0).status().message(), HasSubstr("exceeds session"));
}

TEST_F(DataPlaneTest, ConcurrentCallersStayWithinTheQuotas) {
  const std::string config = dir_.WriteFile(
      "rtd.toml", "[session]\nmax_hbm_bytes = 4194304\nmax_sessions = 2\n");
  StartDaemon({"--config", config});
  auto session = *neuronrt::Session::Open({.client = {.address = address()}});
  std::atomic<int> allocated{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&] {
      if (session->Allocate(0, kMiB).ok()) allocated.fetch_add(1);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(allocated.load(), 4);

  // One session is open; of eight more opened at once, one fits.
  std::atomic<int> opened{0};
  std::vector<std::unique_ptr<neuronrt::Session>> sessions(8);
  threads.clear();
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto another = neuronrt::Session::Open({.client = {.address = address()}});
      if (another.ok()) {
        opened.fetch_add(1);
        sessions[i] = *std::move(another);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(opened.load(), 1);
}

TEST_F(DataPlaneTest, OneUserCannotTakeEverySessionSlot) {
  const std::string config = dir_.WriteFile("rtd.toml", "[session]\nmax_sessions_per_user = 2\n");
  StartDaemon({"--config", config});
  auto first = Open();
  auto second = Open();
  ASSERT_TRUE(first && second);
  auto third = neuronrt::Session::Open({.client = {.address = address()}});
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(third.status().message(), HasSubstr("max_sessions_per_user"));
  // Closing a session (CloseSession returns once it has ended) frees its slot.
  ASSERT_TRUE(first->Close().ok());
  auto again = neuronrt::Session::Open({.client = {.address = address()}});
  EXPECT_TRUE(again.ok()) << again.status();
}

TEST_F(DataPlaneTest, UnattachedConnectionsAreCappedPerUser) {
  const std::string config =
      dir_.WriteFile("rtd.toml", "[session]\nmax_pending_connections_per_user = 2\n");
  StartDaemon({"--config", config});
  const sockaddr_un data_plane = testing::UnixAddress(socket_ + ".data");
  std::vector<int> connections;
  for (int i = 0; i < 3; ++i) {
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&data_plane), sizeof(data_plane)), 0);
    connections.push_back(fd);
  }
  // The third is closed by the daemon at once; the first two wait to attach.
  char byte;
  EXPECT_EQ(::recv(connections[2], &byte, 1, 0), 0);
  pollfd waiting[2] = {{.fd = connections[0], .events = POLLIN, .revents = 0},
                       {.fd = connections[1], .events = POLLIN, .revents = 0}};
  EXPECT_EQ(::poll(waiting, 2, 0), 0);
  for (int fd : connections) ::close(fd);
}

TEST_F(DataPlaneTest, GrpcConnectionsAreCappedPerUser) {
  const std::string config =
      dir_.WriteFile("rtd.toml", "[server]\nmax_connections_per_user = 2\n");
  StartDaemon({"--config", config});
  const sockaddr_un control = testing::UnixAddress(socket_);
  std::vector<int> connections;
  for (int i = 0; i < 3; ++i) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&control), sizeof(control)), 0);
    connections.push_back(fd);
  }
  // The third is closed by the daemon at once; the first two stay open
  // (gRPC waits for their HTTP/2 preface).
  char byte;
  EXPECT_EQ(::recv(connections[2], &byte, 1, 0), 0);
  ::close(connections[2]);
  auto refused = neuronrt::Client::Connect({.address = address()});
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE((*refused)->Health().ok());
  // Once the daemon has seen one go (gRPC closes it; the registry notices
  // at the next connection of the user), the user's slot is free again.
  ::close(connections[0]);
  absl::Status health = absl::UnavailableError("not tried");
  for (const absl::Time deadline = absl::Now() + absl::Seconds(30);
       !health.ok() && absl::Now() < deadline;) {
    auto client = neuronrt::Client::Connect({.address = address()});
    ASSERT_TRUE(client.ok());
    health = (*client)->Health().status();
  }
  EXPECT_TRUE(health.ok()) << health;
  ::close(connections[1]);
}

TEST_F(DataPlaneTest, AHugeRingSizeIsRefusedBeforeItIsRounded) {
  auto session = neuronrt::Session::Open(
      {.client = {.address = address()}, .ring_bytes = (uint64_t{1} << 63) + 1});
  ASSERT_TRUE(session.ok());
  auto stream = (*session)->CreateStream(0);
  EXPECT_EQ(stream.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(stream.status().message(), HasSubstr("exceeds session"));
}

}  // namespace
}  // namespace neuron

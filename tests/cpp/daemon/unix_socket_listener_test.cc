#include "daemon/server/unix_socket_listener.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "absl/synchronization/notification.h"
#include "testing/mock_os_sys_calls.h"
#include "testing/temp_dir.h"
#include "testing/unix_socket.h"

namespace neuron::rtd {
namespace {

using ::testing::_;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Return;

mode_t ModeOf(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

TEST(UnixSocketListenerTest, ListensWithTheModeAndRecordsItsPid) {
  testing::TempDir dir;
  const std::string path = dir.Join("rtd.sock");
  auto listener = UnixSocketListener::Create({.path = path, .mode = 0600}, DefaultOsSysCalls());
  ASSERT_TRUE(listener.ok()) << listener.status();
  EXPECT_EQ(ModeOf(path), 0600);
  std::ifstream lock(path + ".lock");
  pid_t recorded = 0;
  lock >> recorded;
  EXPECT_EQ(recorded, ::getpid());

  auto shared = UnixSocketListener::Create({.path = dir.Join("shared.sock"), .mode = 0660},
                                           DefaultOsSysCalls());
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(ModeOf(dir.Join("shared.sock")), 0660);
}

TEST(UnixSocketListenerTest, HandsOverConnectionsWithPeerCredentials) {
  testing::TempDir dir;
  const std::string path = dir.Join("rtd.sock");
  auto listener = UnixSocketListener::Create({.path = path}, DefaultOsSysCalls());
  ASSERT_TRUE(listener.ok());
  absl::Notification accepted;
  PeerCredentials seen;
  int accepted_fd = -1;
  (*listener)->Start([&](int fd, const PeerCredentials& peer) {
    seen = peer;
    accepted_fd = fd;
    accepted.Notify();
  });
  const int client = testing::ConnectUnix(path);
  ASSERT_GE(client, 0);
  ASSERT_TRUE(accepted.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(seen.pid, ::getpid());
  EXPECT_EQ(seen.uid, ::geteuid());
  EXPECT_EQ(seen.gid, ::getegid());
  ::close(accepted_fd);
  ::close(client);
}

TEST(UnixSocketListenerTest, StopRemovesTheSocketAndRefusesConnections) {
  testing::TempDir dir;
  const std::string path = dir.Join("rtd.sock");
  auto listener = UnixSocketListener::Create({.path = path}, DefaultOsSysCalls());
  ASSERT_TRUE(listener.ok());
  (*listener)->Start([](int fd, const PeerCredentials&) { ::close(fd); });
  (*listener)->Stop();
  EXPECT_FALSE(Exists(path));
  EXPECT_EQ(testing::ConnectUnix(path), -1);
  (*listener)->Stop();
}

TEST(UnixSocketListenerTest, SecondOwnerOfAPathIsRefusedWithTheFirstPid) {
  testing::TempDir dir;
  const std::string path = dir.Join("rtd.sock");
  auto first = UnixSocketListener::Create({.path = path}, DefaultOsSysCalls());
  ASSERT_TRUE(first.ok());
  auto second = UnixSocketListener::Create({.path = path}, DefaultOsSysCalls());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(),
              AllOf(HasSubstr("already serving unix:" + path),
                    HasSubstr("pid " + std::to_string(::getpid()))));
  EXPECT_TRUE(Exists(path)) << "the refused listener must not remove the first one's socket";
}

TEST(UnixSocketListenerTest, RemovesAStaleSocket) {
  testing::TempDir dir;
  const std::string path = dir.Join("rtd.sock");
  ASSERT_TRUE(testing::MakeStaleSocket(path));
  ASSERT_TRUE(Exists(path));
  auto listener = UnixSocketListener::Create({.path = path}, DefaultOsSysCalls());
  ASSERT_TRUE(listener.ok()) << listener.status();
  (*listener)->Start([](int fd, const PeerCredentials&) { ::close(fd); });
  const int client = testing::ConnectUnix(path);
  EXPECT_GE(client, 0);
  ::close(client);
}

TEST(UnixSocketListenerTest, RefusesToReplaceAFileThatIsNotASocket) {
  testing::TempDir dir;
  const std::string path = dir.WriteFile("data.sock", "precious");
  auto listener = UnixSocketListener::Create({.path = path}, DefaultOsSysCalls());
  EXPECT_EQ(listener.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(listener.status().message(), HasSubstr("is not a socket"));
  std::ifstream file(path);
  std::string contents;
  file >> contents;
  EXPECT_EQ(contents, "precious");
}

TEST(UnixSocketListenerTest, RefusesAPrivateDirectoryOpenToOthers) {
  testing::TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  auto listener = UnixSocketListener::Create(
      {.path = dir.Join("rtd.sock"), .require_private_directory = true}, DefaultOsSysCalls());
  EXPECT_EQ(listener.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(listener.status().message(), HasSubstr("mode 0700 (it has uid"));
}

TEST(UnixSocketListenerTest, CreatesAMissingDirectory) {
  testing::TempDir dir;
  const std::string path = dir.Join("sub/rtd.sock");
  auto listener = UnixSocketListener::Create(
      {.path = path, .directory_mode = 0700, .require_private_directory = true},
      DefaultOsSysCalls());
  ASSERT_TRUE(listener.ok()) << listener.status();
  EXPECT_EQ(ModeOf(dir.Join("sub")), 0700);
}

TEST(UnixSocketListenerTest, TooLongPathIsRefused) {
  auto listener = UnixSocketListener::Create({.path = "/tmp/" + std::string(200, 'a')},
                                             DefaultOsSysCalls());
  EXPECT_EQ(listener.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(listener.status().message(), HasSubstr("the limit is 107"));
}

TEST(UnixSocketListenerTest, FailedBindNamesThePathAndLeavesNothingBehind) {
  testing::TempDir dir;
  const std::string path = dir.Join("rtd.sock");
  ::testing::NiceMock<testing::MockOsSysCalls> sys_calls;
  EXPECT_CALL(sys_calls, Bind(_, _, _)).WillOnce(Return(testing::Fails(EACCES)));
  auto listener = UnixSocketListener::Create({.path = path}, sys_calls);
  EXPECT_EQ(listener.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(listener.status().message(), HasSubstr("cannot bind " + path));
  EXPECT_FALSE(Exists(path));
  // The lock was released: the next attempt succeeds.
  EXPECT_TRUE(UnixSocketListener::Create({.path = path}, DefaultOsSysCalls()).ok());
}

TEST(UnixSocketListenerTest, FailedChmodRemovesTheBoundSocket) {
  testing::TempDir dir;
  const std::string path = dir.Join("rtd.sock");
  ::testing::NiceMock<testing::MockOsSysCalls> sys_calls;
  EXPECT_CALL(sys_calls, Chmod(path, _)).WillOnce(Return(testing::Fails(EPERM)));
  auto listener = UnixSocketListener::Create({.path = path}, sys_calls);
  EXPECT_THAT(listener.status().message(), HasSubstr("cannot set the mode of " + path));
  EXPECT_FALSE(Exists(path));
}

TEST(UnixSocketListenerTest, ConnectionWhosePeerCannotBeReadIsClosed) {
  testing::TempDir dir;
  const std::string path = dir.Join("rtd.sock");
  ::testing::NiceMock<testing::MockOsSysCalls> sys_calls;
  absl::Notification refused;
  auto listener = UnixSocketListener::Create({.path = path}, sys_calls);
  ASSERT_TRUE(listener.ok());
  int refused_fd = -1;
  EXPECT_CALL(sys_calls, GetSockOpt(_, SOL_SOCKET, SO_PEERCRED, _, _))
      .WillOnce([&](int fd, int, int, void*, socklen_t*) {
        refused_fd = fd;
        return testing::Fails(EINVAL);
      });
  EXPECT_CALL(sys_calls, Close(_)).WillRepeatedly([&](int fd) {
    if (fd == refused_fd) refused.Notify();
    return DefaultOsSysCalls().Close(fd);
  });
  bool handed_over = false;
  (*listener)->Start([&](int fd, const PeerCredentials&) {
    handed_over = true;
    ::close(fd);
  });
  const int client = testing::ConnectUnix(path);
  ASSERT_GE(client, 0);
  ASSERT_TRUE(refused.WaitForNotificationWithTimeout(absl::Seconds(30)));
  char byte;
  EXPECT_EQ(::read(client, &byte, 1), 0) << "the daemon closed the connection";
  ::close(client);
  (*listener)->Stop();
  EXPECT_FALSE(handed_over);
}

}  // namespace
}  // namespace neuron::rtd

#include "neuronrt/address.h"
#include "neuronrt/client.h"
#include "neuronrt/session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>


#include "testing/temp_dir.h"
#include "testing/unix_socket.h"

namespace neuronrt {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Sets an environment variable for one test and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(AddressTest, ExplicitAddressWins) {
  ScopedEnv env("NEURON_RTD_ADDRESS", "unix:/from/env.sock");
  absl::StatusOr<DaemonAddress> address = ResolveDaemonAddress("unix:/explicit.sock");
  ASSERT_TRUE(address.ok());
  EXPECT_EQ(address->target, "unix:/explicit.sock");
  EXPECT_EQ(address->socket_path, "/explicit.sock");
  EXPECT_EQ(address->origin, "--address");
}

TEST(AddressTest, EnvironmentComesNext) {
  ScopedEnv env("NEURON_RTD_ADDRESS", "unix:/from/env.sock");
  absl::StatusOr<DaemonAddress> address = ResolveDaemonAddress();
  ASSERT_TRUE(address.ok());
  EXPECT_EQ(address->socket_path, "/from/env.sock");
  EXPECT_EQ(address->origin, "NEURON_RTD_ADDRESS");
}

TEST(AddressTest, MalformedAddressNamesItsOrigin) {
  ScopedEnv env("NEURON_RTD_ADDRESS", "localhost:50051");
  absl::StatusOr<DaemonAddress> address = ResolveDaemonAddress();
  EXPECT_EQ(address.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(address.status().message(),
              AllOf(HasSubstr("\"localhost:50051\""), HasSubstr("NEURON_RTD_ADDRESS"),
                    HasSubstr("unix:/absolute/path")));
  EXPECT_FALSE(ResolveDaemonAddress("unix:relative.sock").ok());
  EXPECT_FALSE(ResolveDaemonAddress("unix:").ok());
}

TEST(AddressTest, PerUserSocketWhenItExists) {
  neuron::testing::TempDir runtime_dir;
  ScopedEnv env("NEURON_RTD_ADDRESS", nullptr);
  ScopedEnv xdg("XDG_RUNTIME_DIR", runtime_dir.path().c_str());
  ASSERT_TRUE(neuron::testing::MakeStaleSocket(runtime_dir.Join("neuron-rtd.sock")));
  absl::StatusOr<DaemonAddress> address = ResolveDaemonAddress();
  ASSERT_TRUE(address.ok());
  EXPECT_EQ(address->socket_path, runtime_dir.Join("neuron-rtd.sock"));
  EXPECT_EQ(address->origin, "per-user socket");
}

TEST(AddressTest, FallsBackToThePerUserSocketWhenNoSocketExists) {
  neuron::testing::TempDir runtime_dir;
  ScopedEnv env("NEURON_RTD_ADDRESS", nullptr);
  ScopedEnv xdg("XDG_RUNTIME_DIR", runtime_dir.path().c_str());
  if (::access("/run/neuron-rtd/neuron-rtd.sock", F_OK) == 0) {
    GTEST_SKIP() << "a system daemon's socket exists on this machine";
  }
  absl::StatusOr<DaemonAddress> address = ResolveDaemonAddress();
  ASSERT_TRUE(address.ok());
  EXPECT_EQ(address->target, "unix:" + runtime_dir.Join("neuron-rtd.sock"));
}

TEST(DaemonTrustTest, APerUserDirectoryMustBePrivateToTheUser) {
  neuron::testing::TempDir base;
  const std::string directory = base.Join("rtd");
  ASSERT_EQ(::mkdir(directory.c_str(), 0700), 0);
  EXPECT_TRUE(CheckPrivateDirectory(directory).ok());

  ASSERT_EQ(::chmod(directory.c_str(), 0755), 0);
  absl::Status open_to_others = CheckPrivateDirectory(directory);
  EXPECT_EQ(open_to_others.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(open_to_others.message(), HasSubstr("mode 0755"));
  ASSERT_EQ(::chmod(directory.c_str(), 0700), 0);

  const std::string link = base.Join("link");
  ASSERT_EQ(::symlink(directory.c_str(), link.c_str()), 0);
  EXPECT_THAT(CheckPrivateDirectory(link).message(), HasSubstr("a symlink"));

  if (::getuid() != 0) GTEST_SKIP() << "giving a directory to another user needs root";
  ASSERT_EQ(::chown(directory.c_str(), 4242, 4242), 0);
  absl::Status foreign = CheckPrivateDirectory(directory);
  EXPECT_EQ(foreign.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(foreign.message(), HasSubstr("owned by uid 4242"));
}

// Another local user created the per-user directory first and serves a
// "daemon" in it: the client must not connect, let alone send a tensor.
TEST(DaemonTrustTest, ASocketServedByAnotherUserIsRefused) {
  if (::getuid() != 0) GTEST_SKIP() << "serving a socket as another user needs root";
  neuron::testing::TempDir base;
  ASSERT_EQ(::chmod(base.path().c_str(), 0755), 0);
  const std::string directory = base.Join("shared");
  ASSERT_EQ(::mkdir(directory.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(directory.c_str(), 0777), 0);
  const std::string path = directory + "/neuron-rtd.sock";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t server = ::fork();
  ASSERT_GE(server, 0);
  if (server == 0) {
    if (::setgid(4242) != 0 || ::setuid(4242) != 0) ::_exit(1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    const sockaddr_un address = neuron::testing::UnixAddress(path);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(fd, 8) != 0) {
      ::_exit(2);
    }
    char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) ::_exit(3);
    while (true) ::pause();
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect({.address = "unix:" + path});
  ::kill(server, SIGKILL);
  ::waitpid(server, nullptr, 0);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(client.status().message(), HasSubstr("served by uid 4242"));

  // Without XDG_RUNTIME_DIR, the same directory as the per-user one.
  ScopedEnv env("NEURON_RTD_ADDRESS", nullptr);
  ScopedEnv xdg("XDG_RUNTIME_DIR", directory.c_str());
  absl::StatusOr<std::unique_ptr<Client>> per_user = Client::Connect({});
  ASSERT_FALSE(per_user.ok());
  EXPECT_THAT(per_user.status().message(), HasSubstr("mode 0777"));
}

}  // namespace
}  // namespace neuronrt

namespace neuronrt {
namespace {

TEST(CoreListTest, ParsesNeuronRtVisibleCoresSyntax) {
  EXPECT_THAT(*ParseCoreList("3"), ::testing::ElementsAre(3));
  EXPECT_THAT(*ParseCoreList("0-3"), ::testing::ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(*ParseCoreList("4,0-1,1"), ::testing::ElementsAre(0, 1, 4));
  for (const char* bad : {"", "a", "3-1", "1-", "-2", "1,,2", "0-99999"}) {
    EXPECT_EQ(ParseCoreList(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace neuronrt

#include "neuronrt/address.h"
#include "neuronrt/session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
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

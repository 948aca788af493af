// Grants: cores and an HBM quota behind a socket directory of their own.
// Sessions opened through a grant's socket use only its cores and quota,
// act only within the grant whatever their uid, and see a read-only Admin
// limited to the grant; deleting a grant ends its sessions and removes its
// directory. A mount namespace plays the container that receives the
// directory read-only, as the device plugin's Allocate gives it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "e2e/data_plane_fixture.h"
#include "e2e/raw_session.h"
#include "neuron/rtd/v1/runtime.grpc.pb.h"
#include "neuronrt/client.h"
#include "neuronrt/session.h"
#include "testing/subprocess.h"

namespace neuron {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class GrantsTest : public DataPlaneTest {
 protected:
  std::string GrantAddress(const std::string& id) const {
    return "unix:" + dir_.Join("grants/" + id + "/neuron-rtd.sock");
  }

  neuronrt::GrantInfo Grant(const std::string& id, std::vector<uint32_t> cores,
                            uint64_t quota) {
    absl::StatusOr<neuronrt::GrantInfo> grant = Admin()->CreateGrant(id, cores, quota, "test");
    EXPECT_TRUE(grant.ok()) << grant.status();
    return grant.ok() ? *grant : neuronrt::GrantInfo{};
  }

  absl::StatusOr<std::unique_ptr<neuronrt::Session>> OpenThrough(const std::string& id,
                                                                 std::vector<uint32_t> cores = {}) {
    return neuronrt::Session::Open(
        {.client = {.address = GrantAddress(id)}, .client_name = "in " + id, .cores = cores});
  }
};

TEST_F(GrantsTest, SessionsOfAGrantUseOnlyItsCoresAndShareItsQuota) {
  const neuronrt::GrantInfo grant = Grant("g1", {1}, 2 * kMiB);
  EXPECT_EQ(grant.directory, dir_.Join("grants/g1"));
  struct stat info {};
  ASSERT_EQ(::stat((grant.directory + "/neuron-rtd.sock").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0666u);

  // No cores asked: the grant's; the data plane is found beside the socket.
  auto first = OpenThrough("g1");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT((*first)->cores(), ElementsAre(1u));
  auto stream = *(*first)->CreateStream(1);
  auto a = (*first)->Allocate(1, kMiB);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(stream->Fill(a->device_address, kMiB, 7, 1).ok());
  EXPECT_TRUE(stream->Synchronize().ok());

  auto refused = OpenThrough("g1", {0, 1});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("core 0 is not granted: the sessions of grant g1 may use cores 1"));

  // The quota is the grant's, over all its sessions.
  auto second = OpenThrough("g1");
  ASSERT_TRUE(second.ok()) << second.status();
  auto b = (*second)->Allocate(1, kMiB);
  ASSERT_TRUE(b.ok()) << b.status();
  absl::Status over = (*second)->Allocate(1, kMiB).status();
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(over.message(), HasSubstr("grant g1's HBM quota"));
  auto listed = Admin()->ListGrants();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().hbm_used_bytes, 2 * kMiB);
  EXPECT_EQ(listed->front().session_count, 2u);
  // Freed, or its session closed: the quota has room again.
  ASSERT_TRUE((*first)->Free(*a).ok());
  EXPECT_TRUE((*second)->Allocate(1, kMiB).ok());
  ASSERT_TRUE((*second)->Close().ok());
  EXPECT_TRUE((*first)->Allocate(1, 2 * kMiB).ok());

  // The daemon's own socket is not bound by any grant.
  auto outside = Open("outside");
  EXPECT_TRUE(outside->Allocate(0, 8 * kMiB).ok());
}

TEST_F(GrantsTest, ThroughAGrantAdminIsReadOnlyAndLimitedToTheGrant) {
  auto host_session = Open("host");
  Grant("g2", {1}, 0);
  auto tenant = OpenThrough("g2");
  ASSERT_TRUE(tenant.ok()) << tenant.status();
  auto inside = neuronrt::Client::Connect({.address = GrantAddress("g2")});
  ASSERT_TRUE(inside.ok());

  auto sessions = (*inside)->ListSessions();
  ASSERT_TRUE(sessions.ok()) << sessions.status();
  ASSERT_EQ(sessions->size(), 1u);
  EXPECT_EQ(sessions->front().session_id, (*tenant)->id());
  auto devices = (*inside)->ListDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_THAT(devices->front().cores, ElementsAre(1u));
  auto stats = (*inside)->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->cores.size(), 1u);
  EXPECT_EQ(stats->cores[0].core, 1u);
  EXPECT_EQ(stats->daemon.sessions_opened, 0u) << "other tenants' figures are not shown";
  EXPECT_FALSE(stats->daemon.version.empty());
  auto grants = (*inside)->ListGrants();
  ASSERT_TRUE(grants.ok());
  ASSERT_EQ(grants->size(), 1u);

  // The test runs as root: through the grant, root is no administrator.
  for (absl::Status denied :
       {(*inside)->KillSession(host_session->id(), "x"), (*inside)->Drain(true).status(),
        (*inside)->CreateGrant("g3", {0}, 0, "").status(),
        (*inside)->DeleteGrant("g2", "").status(), (*inside)->ResetDevice(0).status(),
        (*inside)->GetCacheInfo().status(), (*inside)->ListCommunicators().status()}) {
    EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied) << denied;
    EXPECT_THAT(denied.message(), HasSubstr("through grant g2's socket"));
  }
  // Nor can its Runtime calls touch a session opened elsewhere.
  auto raw = testing::RawSession::Open(GrantAddress("g2"));
  ASSERT_TRUE(raw.ok()) << raw.status();
  grpc::ClientContext context;
  rtd::v1::CloseSessionRequest close;
  close.set_session_id(host_session->id());
  rtd::v1::CloseSessionResponse closed;
  const grpc::Status status = (*raw)->runtime().CloseSession(&context, close, &closed);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << status.error_message();
  auto host_stream = *host_session->CreateStream(0);
  EXPECT_TRUE(host_stream->Synchronize().ok());
}

TEST_F(GrantsTest, DeletingAGrantEndsItsSessionsAndRemovesItsDirectory) {
  const neuronrt::GrantInfo grant = Grant("g4", {0, 1}, 0);
  auto tenant = OpenThrough("g4");
  ASSERT_TRUE(tenant.ok()) << tenant.status();
  auto stream = *(*tenant)->CreateStream(0);
  auto ended = Admin()->DeleteGrant("g4", "pod gone");
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_THAT(*ended, ElementsAre((*tenant)->id()));
  EXPECT_NE(::access(grant.directory.c_str(), F_OK), 0);
  absl::Status status = stream->Fill(0, 8, 0, 1).status();
  if (status.ok()) status = stream->Synchronize();
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
  auto stats = Admin()->GetStats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->daemon.sessions_ended["grant_revoked"], 1u);
  EXPECT_TRUE(WaitHbmUsed(0));
  EXPECT_EQ(Admin()->DeleteGrant("g4", "").status().code(), absl::StatusCode::kNotFound);
  // The same id again (the device plugin re-creating it after a restart).
  Grant("g4", {1}, 0);
  EXPECT_TRUE(OpenThrough("g4").ok());
}

TEST_F(GrantsTest, AGrantsSessionsCountApartFromTheSameUidsOnTheHost) {
  const std::string config = dir_.Join("one-session.toml");
  std::ofstream(config) << "[session]\nmax_sessions_per_user = 1\n";
  StartDaemon({"--config", config});
  Grant("g5", {0}, 0);
  auto in_grant = OpenThrough("g5");
  ASSERT_TRUE(in_grant.ok()) << in_grant.status();
  absl::Status second = OpenThrough("g5").status();
  EXPECT_EQ(second.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(second.message(), HasSubstr("uid 0 of grant g5 already has 1 sessions"));
  // The container's root used up its own sessions, not the host root's.
  EXPECT_NE(Open("host"), nullptr);
}

TEST_F(GrantsTest, BadGrantsAreRefusedByName) {
  auto refuse = [&](const std::string& id, std::vector<uint32_t> cores, std::string label,
                    absl::StatusCode code, const std::string& says) {
    absl::Status status = Admin()->CreateGrant(id, cores, 0, label).status();
    EXPECT_EQ(status.code(), code) << id << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr(says)) << id;
  };
  refuse("../escape", {0}, "", absl::StatusCode::kInvalidArgument, "is not 1 to 63");
  refuse("", {0}, "", absl::StatusCode::kInvalidArgument, "is not 1 to 63");
  refuse("Upper", {0}, "", absl::StatusCode::kInvalidArgument, "is not 1 to 63");
  refuse(std::string(64, 'a'), {0}, "", absl::StatusCode::kInvalidArgument, "is not 1 to 63");
  refuse("none", {}, "", absl::StatusCode::kInvalidArgument, "at least one core");
  refuse("far", {7}, "", absl::StatusCode::kInvalidArgument, "core 7 does not exist");
  refuse("wordy", {0}, std::string(300, 'x'), absl::StatusCode::kInvalidArgument, "label");
  Grant("taken", {0}, 0);
  refuse("taken", {1}, "", absl::StatusCode::kAlreadyExists, "exists with cores 0");
  EXPECT_EQ(::access(dir_.Join("escape").c_str(), F_OK), -1);
}

TEST_F(GrantsTest, NeuronctlGrantCreatesListsAndRemoves) {
  testing::CommandResult created = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", address(), "grant", "create", "pod-x", "--cores",
       "0-1", "--hbm-quota", "1048576", "--label", "ns/pod-x"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  EXPECT_THAT(created.out, HasSubstr("grant pod-x created: " + dir_.Join("grants/pod-x")));
  testing::CommandResult listed = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", address(), "grant", "ls"});
  EXPECT_THAT(listed.out, HasSubstr("pod-x"));
  EXPECT_THAT(listed.out, HasSubstr("0,1"));
  EXPECT_THAT(listed.out, HasSubstr("1 MiB"));
  testing::CommandResult bad = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", address(), "grant", "create", "y", "--cores",
       "x"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("--cores"));
  testing::CommandResult removed = testing::RunCommand(
      {testing::NeuronctlBinary(), "--address", address(), "grant", "rm", "pod-x"});
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_THAT(removed.out, HasSubstr("grant pod-x deleted; 0 session(s) ended"));
}

// The container: a mount namespace where the grant's directory is mounted
// read-only at /run/neuron-rtd-like path, and a process of another uid.
TEST_F(GrantsTest, AContainerGivenTheGrantDirectoryReadOnlyIsHeldToIt) {
  if (::geteuid() != 0 || ::access("/usr/bin/unshare", X_OK) != 0 ||
      ::access("/usr/bin/setpriv", X_OK) != 0) {
    GTEST_SKIP() << "needs root, unshare and setpriv to play a container";
  }
  if (testing::RunCommand({"/usr/bin/unshare", "-m", "/bin/true"}).exit_code != 0) {
    GTEST_SKIP() << "this environment does not allow mount namespaces";
  }
  Grant("pod", {1}, 2 * kMiB);
  const std::string mount_point = dir_.Join("container-run");
  ASSERT_EQ(::mkdir(mount_point.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  auto in_container = [&](const std::string& command) {
    return testing::RunCommand(
        {"/usr/bin/unshare", "-m", "/bin/sh", "-c",
         "mount --bind -o ro " + dir_.Join("grants/pod") + " " + mount_point + " && " + command});
  };
  const std::string probe = "/usr/bin/setpriv --reuid=4242 --regid=4242 --clear-groups " +
                            testing::ClientProbeBinary() + " work unix:" + mount_point +
                            "/neuron-rtd.sock ";
  // The probe allocates 4 MiB: over the 2 MiB quota.
  testing::CommandResult over = in_container(probe + "1");
  EXPECT_EQ(over.exit_code, 1) << over.err;
  EXPECT_THAT(over.err, HasSubstr("grant pod's HBM quota"));
  testing::CommandResult outside = in_container(probe + "0");
  EXPECT_EQ(outside.exit_code, 1);
  EXPECT_THAT(outside.err, HasSubstr("core 0 is not granted"));
  testing::CommandResult replace = in_container("rm " + mount_point + "/neuron-rtd.sock");
  EXPECT_NE(replace.exit_code, 0);
  EXPECT_THAT(replace.err, HasSubstr("Read-only file system"));

  ASSERT_TRUE(Admin()->DeleteGrant("pod", "").ok());
  Grant("pod", {1}, 8 * kMiB);
  testing::CommandResult within = in_container(probe + "1");
  EXPECT_EQ(within.exit_code, 0) << within.out << within.err;
}

}  // namespace
}  // namespace neuron

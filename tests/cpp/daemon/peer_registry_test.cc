#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>
#include <vector>

#include "daemon/server/peer_credentials.h"

namespace neuron::rtd {
namespace {

// A connected socket pair; the registry is given the first end.
struct Connection {
  Connection() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0); }
  ~Connection() { Close(); }
  void Close() {
    for (int& fd : fds) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }
  int fd() const { return fds[0]; }
  int fds[2] = {-1, -1};
};

constexpr uint32_t kUnlimited = UINT32_MAX;

TEST(PeerRegistryTest, LooksUpGrpcFdPeers) {
  PeerRegistry registry(DefaultOsSysCalls());
  Connection connection;
  ASSERT_TRUE(registry.Admit(connection.fd(), {.pid = 42, .uid = 1000, .gid = 100}, kUnlimited));
  std::optional<PeerCredentials> peer = registry.Lookup("fd:" + std::to_string(connection.fd()));
  ASSERT_TRUE(peer.has_value());
  EXPECT_EQ(peer->pid, 42);
  EXPECT_EQ(peer->uid, 1000u);
  EXPECT_EQ(peer->gid, 100u);
}

TEST(PeerRegistryTest, ANewConnectionOnAReusedFdReplacesTheOldPeer) {
  PeerRegistry registry(DefaultOsSysCalls());
  Connection connection;
  const int fd = connection.fd();
  ASSERT_TRUE(registry.Admit(fd, {.pid = 42, .uid = 1000, .gid = 100}, kUnlimited));
  ASSERT_TRUE(registry.Admit(fd, {.pid = 43, .uid = 0, .gid = 0}, kUnlimited));
  EXPECT_EQ(registry.Lookup("fd:" + std::to_string(fd))->pid, 43);
}

TEST(PeerRegistryTest, UnknownOrMalformedPeersAreNotFound) {
  PeerRegistry registry(DefaultOsSysCalls());
  Connection connection;
  ASSERT_TRUE(registry.Admit(connection.fd(), {.pid = 42, .uid = 1000, .gid = 100}, kUnlimited));
  EXPECT_FALSE(registry.Lookup("fd:9999").has_value());
  EXPECT_FALSE(registry.Lookup("fd:7x").has_value());
  EXPECT_FALSE(registry.Lookup("fd:").has_value());
  EXPECT_FALSE(registry.Lookup("unix:/tmp/x.sock").has_value());
  EXPECT_FALSE(registry.Lookup("").has_value());
}

TEST(PeerRegistryTest, EachUserHoldsAtMostItsConnections) {
  PeerRegistry registry(DefaultOsSysCalls());
  std::vector<Connection> alice(3);
  Connection bob;
  ASSERT_TRUE(registry.Admit(alice[0].fd(), {.pid = 1, .uid = 1000, .gid = 0}, 2));
  ASSERT_TRUE(registry.Admit(alice[1].fd(), {.pid = 2, .uid = 1000, .gid = 0}, 2));
  EXPECT_FALSE(registry.Admit(alice[2].fd(), {.pid = 3, .uid = 1000, .gid = 0}, 2));
  EXPECT_TRUE(registry.Admit(bob.fd(), {.pid = 4, .uid = 1001, .gid = 0}, 2));
  EXPECT_EQ(registry.ConnectionsOf(1000), 2u);
  // gRPC closed one of Alice's connections without telling anyone.
  alice[0].Close();
  EXPECT_EQ(registry.ConnectionsOf(1000), 1u);
  EXPECT_TRUE(registry.Admit(alice[2].fd(), {.pid = 3, .uid = 1000, .gid = 0}, 2));
}

TEST(PeerRegistryTest, AGrantsConnectionsCountApartFromTheSameUidsElsewhere) {
  PeerRegistry registry(DefaultOsSysCalls());
  std::vector<Connection> host(2);
  std::vector<Connection> container(2);
  ASSERT_TRUE(registry.Admit(container[0].fd(), {.pid = 1, .uid = 0, .grant = "pod"}, 1));
  EXPECT_FALSE(registry.Admit(container[1].fd(), {.pid = 2, .uid = 0, .grant = "pod"}, 1));
  // The container's root has used its one connection; the host's has not.
  EXPECT_TRUE(registry.Admit(host[0].fd(), {.pid = 3, .uid = 0}, 1));
  EXPECT_EQ(registry.ConnectionsOf(0), 1u);
  EXPECT_EQ(registry.ConnectionsOf(0, "pod"), 1u);
  EXPECT_EQ(registry.Lookup("fd:" + std::to_string(container[0].fd()))->grant, "pod");
}

TEST(PeerRegistryTest, ADescriptorNumberReusedForAnotherSocketIsNotTheOldConnection) {
  PeerRegistry registry(DefaultOsSysCalls());
  auto first = std::make_unique<Connection>();
  const int fd = first->fd();
  ASSERT_TRUE(registry.Admit(fd, {.pid = 1, .uid = 1000, .gid = 0}, 1));
  first->Close();
  // Another socket takes the number, unrecorded (a data-plane connection).
  Connection other;
  ASSERT_EQ(::dup2(other.fds[0], fd), fd);
  EXPECT_EQ(registry.ConnectionsOf(1000), 0u);
  ::close(fd);
}

}  // namespace
}  // namespace neuron::rtd

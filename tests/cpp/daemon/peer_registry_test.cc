#include <gtest/gtest.h>

#include "daemon/server/peer_credentials.h"

namespace neuron::rtd {
namespace {

TEST(PeerRegistryTest, LooksUpGrpcFdPeers) {
  PeerRegistry registry;
  registry.Record(7, {.pid = 42, .uid = 1000, .gid = 100});
  std::optional<PeerCredentials> peer = registry.Lookup("fd:7");
  ASSERT_TRUE(peer.has_value());
  EXPECT_EQ(peer->pid, 42);
  EXPECT_EQ(peer->uid, 1000u);
  EXPECT_EQ(peer->gid, 100u);
}

TEST(PeerRegistryTest, ANewConnectionOnAReusedFdReplacesTheOldPeer) {
  PeerRegistry registry;
  registry.Record(7, {.pid = 42, .uid = 1000, .gid = 100});
  registry.Record(7, {.pid = 43, .uid = 0, .gid = 0});
  EXPECT_EQ(registry.Lookup("fd:7")->pid, 43);
}

TEST(PeerRegistryTest, UnknownOrMalformedPeersAreNotFound) {
  PeerRegistry registry;
  registry.Record(7, {.pid = 42, .uid = 1000, .gid = 100});
  EXPECT_FALSE(registry.Lookup("fd:8").has_value());
  EXPECT_FALSE(registry.Lookup("fd:7x").has_value());
  EXPECT_FALSE(registry.Lookup("fd:").has_value());
  EXPECT_FALSE(registry.Lookup("unix:/tmp/x.sock").has_value());
  EXPECT_FALSE(registry.Lookup("").has_value());
}

}  // namespace
}  // namespace neuron::rtd

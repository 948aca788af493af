// What other hosts send a communicator, matched to the operations that
// take it; and the hosts' topology as a client describes it.
#include "daemon/collectives/host_mailbox.h"

#include <string>
#include <thread>
#include <vector>

#include "daemon/collectives/host_topology.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neuron::rtd::collectives {
namespace {

using ::testing::HasSubstr;

neuron_rtd_fabric_header Data(uint64_t index, uint32_t host, uint64_t offset = 0) {
  neuron_rtd_fabric_header header{};
  header.type = NEURON_RTD_FABRIC_DATA;
  header.phase = NEURON_RTD_FABRIC_PHASE_REDUCE;
  header.index = index;
  header.source_host = host;
  header.offset = offset;
  return header;
}

std::span<const uint8_t> Bytes(const std::string& text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

TEST(HostMailboxTest, QueuedMailWaitsForItsTaker) {
  HostMailbox mailbox(1 << 20);
  ASSERT_TRUE(mailbox.Deliver(Data(3, 1), Bytes("abc")).ok());
  EXPECT_EQ(mailbox.queued_bytes(), 3u);
  // Another key's taker does not get it.
  EXPECT_EQ(mailbox.Take(KeyOf(Data(4, 1)), absl::Now()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  absl::StatusOr<Mail> mail = mailbox.Take(KeyOf(Data(3, 1)), absl::InfiniteFuture());
  ASSERT_TRUE(mail.ok());
  EXPECT_EQ(std::string(mail->payload.begin(), mail->payload.end()), "abc");
  EXPECT_EQ(mailbox.queued_bytes(), 0u);
}

TEST(HostMailboxTest, ATakerWaitsForMailThatComesLater) {
  HostMailbox mailbox(1 << 20);
  std::thread sender([&] { ASSERT_TRUE(mailbox.Deliver(Data(1, 0), Bytes("x")).ok()); });
  absl::StatusOr<Mail> mail = mailbox.Take(KeyOf(Data(1, 0)), absl::InfiniteFuture());
  sender.join();
  ASSERT_TRUE(mail.ok());
  EXPECT_EQ(mail->payload.size(), 1u);
}

TEST(HostMailboxTest, ClaimsTakeQueuedAndLaterMailUntilSatisfied) {
  HostMailbox mailbox(1 << 20);
  ASSERT_TRUE(mailbox.Deliver(Data(7, 1, 0), Bytes("ab")).ok());
  std::string seen;
  absl::Status finished = absl::UnknownError("not yet");
  mailbox.AddClaim(KeyOf(Data(7, 1)),
                   {.take =
                        [&](const neuron_rtd_fabric_header&, std::span<const uint8_t> payload) {
                          seen.append(payload.begin(), payload.end());
                          return seen.size() >= 4;
                        },
                    .done = [&](const absl::Status& status) { finished = status; }});
  EXPECT_EQ(seen, "ab");
  EXPECT_EQ(finished.code(), absl::StatusCode::kUnknown);
  ASSERT_TRUE(mailbox.Deliver(Data(7, 1, 2), Bytes("cd")).ok());
  EXPECT_EQ(seen, "abcd");
  EXPECT_TRUE(finished.ok());
  // Satisfied: later mail of the key queues again.
  ASSERT_TRUE(mailbox.Deliver(Data(7, 1, 4), Bytes("e")).ok());
  EXPECT_EQ(mailbox.queued_bytes(), 1u);
}

TEST(HostMailboxTest, AbortFailsClaimsAndTakersAndRefusesMail) {
  HostMailbox mailbox(1 << 20);
  absl::Status finished;
  mailbox.AddClaim(KeyOf(Data(1, 1)),
                   {.take = [](const neuron_rtd_fabric_header&,
                               std::span<const uint8_t>) { return true; },
                    .done = [&](const absl::Status& status) { finished = status; }});
  std::thread waiter([&] {
    EXPECT_EQ(mailbox.Take(KeyOf(Data(2, 1)), absl::InfiniteFuture()).status().code(),
              absl::StatusCode::kAborted);
  });
  mailbox.Abort(absl::AbortedError("host 1 failed"));
  waiter.join();
  EXPECT_EQ(finished.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(mailbox.Deliver(Data(1, 1), Bytes("x")).code(), absl::StatusCode::kAborted);
  // A claim after the abort fails at once.
  absl::Status late;
  mailbox.AddClaim(KeyOf(Data(3, 1)),
                   {.take = [](const neuron_rtd_fabric_header&,
                               std::span<const uint8_t>) { return true; },
                    .done = [&](const absl::Status& status) { late = status; }});
  EXPECT_EQ(late.code(), absl::StatusCode::kAborted);
}

TEST(HostMailboxTest, BoundsWhatWaitsUnclaimed) {
  HostMailbox mailbox(4);
  ASSERT_TRUE(mailbox.Deliver(Data(1, 1), Bytes("abcd")).ok());
  absl::Status refused = mailbox.Deliver(Data(2, 1), Bytes("e"));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), HasSubstr("more than 4 bytes"));
}

TEST(HostMailboxTest, ADuplicateClaimFailsAndAWithdrawnOneNeverRuns) {
  HostMailbox mailbox(1 << 20);
  int taken = 0;
  auto claim = [&](absl::Status* status) {
    return HostMailbox::Claim{.take =
                                  [&](const neuron_rtd_fabric_header&, std::span<const uint8_t>) {
                                    ++taken;
                                    return false;
                                  },
                              .done = [status](const absl::Status& s) { *status = s; }};
  };
  absl::Status first = absl::UnknownError("waiting"), second;
  mailbox.AddClaim(KeyOf(Data(5, 1)), claim(&first));
  mailbox.AddClaim(KeyOf(Data(5, 1)), claim(&second));
  EXPECT_EQ(second.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(mailbox.RemoveClaim(KeyOf(Data(5, 1))));
  EXPECT_FALSE(mailbox.RemoveClaim(KeyOf(Data(5, 1))));
  ASSERT_TRUE(mailbox.Deliver(Data(5, 1), Bytes("x")).ok());
  EXPECT_EQ(taken, 0);
  EXPECT_EQ(first.code(), absl::StatusCode::kUnknown);
}

TEST(HostTopologyTest, AcceptsAPartitionOfTheRanks) {
  auto topology = MakeHostTopology(1, {"a", "b"}, {{0, 2}, {1, 3}}, 4, std::string(16, 'k'));
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->hosts(), 2u);
  EXPECT_EQ(topology->local_ranks(), (std::vector<uint32_t>{1, 3}));
  EXPECT_TRUE(topology->IsLocal(3));
  EXPECT_FALSE(topology->IsLocal(2));
  auto same = MakeHostTopology(0, {"a", "b"}, {{0, 2}, {1, 3}}, 4, std::string(16, 'k'));
  auto other = MakeHostTopology(0, {"a", "b"}, {{0, 1}, {2, 3}}, 4, std::string(16, 'k'));
  EXPECT_EQ(topology->Fingerprint(), same->Fingerprint());
  EXPECT_NE(topology->Fingerprint(), other->Fingerprint());
}

TEST(HostTopologyTest, RefusesWhatIsNotAPartition) {
  const std::string key(16, 'k');
  struct Case {
    uint32_t host;
    std::vector<std::string> addresses;
    std::vector<std::vector<uint32_t>> ranks;
    uint32_t world;
    std::string key;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {0, {"a"}, {{0}}, 1, key, "2 to"},
      {2, {"a", "b"}, {{0}, {1}}, 2, key, "host 2 is not one"},
      {0, {"a", "b"}, {{0}, {1}}, 2, "short", "group key"},
      {0, {"a", ""}, {{0}, {1}}, 2, key, "fabric address"},
      {0, {"a", "b"}, {{0}, {}}, 2, key, "no ranks"},
      {0, {"a", "b"}, {{0}, {5}}, 2, key, "rank 5"},
      {0, {"a", "b"}, {{0, 1}, {1}}, 2, key, "on hosts"},
      {0, {"a", "b"}, {{1, 0}, {2}}, 3, key, "ascending"},
      {0, {"a", "b"}, {{0}, {1}}, 3, key, "rank 2 is on no host"},
      {0, {"a", "b"}, {{0}}, 2, key, "have ranks"},
  };
  for (const Case& each : cases) {
    auto topology = MakeHostTopology(each.host, each.addresses, each.ranks, each.world, each.key);
    EXPECT_EQ(topology.status().code(), absl::StatusCode::kInvalidArgument) << each.expected;
    EXPECT_THAT(topology.status().message(), HasSubstr(each.expected));
  }
}

}  // namespace
}  // namespace neuron::rtd::collectives

// The schedules of the algorithms between hosts and the ring's pipeline
// bookkeeping.
#include "daemon/collectives/host_algorithm.h"

#include <set>
#include <thread>

#include "daemon/collectives/internal/ring_progress.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neuron::rtd::collectives {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(HostAlgorithmTest, SmallAllReducesRunByRecursiveDoublingLargeOnesByTheRing) {
  const HostAlgorithmOptions options{.recursive_doubling_max_bytes = 1024};
  EXPECT_EQ(AllReduceAlgorithm(options, 0), NEURON_RTD_FABRIC_ALGORITHM_RECURSIVE_DOUBLING);
  EXPECT_EQ(AllReduceAlgorithm(options, 1024), NEURON_RTD_FABRIC_ALGORITHM_RECURSIVE_DOUBLING);
  EXPECT_EQ(AllReduceAlgorithm(options, 1025), NEURON_RTD_FABRIC_ALGORITHM_RING);
  EXPECT_EQ(AlgorithmName(NEURON_RTD_FABRIC_ALGORITHM_RING), "ring");
  EXPECT_EQ(AlgorithmName(77), "an unknown algorithm");
}

TEST(HostAlgorithmTest, SharesCoverTheElementsInOrder) {
  uint64_t next = 0;
  for (uint32_t segment = 0; segment < 4; ++segment) {
    const auto [begin, end] = ShareOf(segment, 4, 10, 2);
    EXPECT_EQ(begin, next);
    next = end;
  }
  EXPECT_EQ(next, 20u);
  EXPECT_EQ(ShareOf(3, 4, 10, 2), std::make_pair(uint64_t{18}, uint64_t{20}));
  EXPECT_EQ(ShareOf(4, 5, 2, 4), std::make_pair(uint64_t{8}, uint64_t{8}));  // empty
}

// Simulates the ring's schedule on sets of contributions: every host ends
// with every segment reduced over every host, and each step forwards what
// the previous step received.
TEST(HostAlgorithmTest, TheRingReducesEverySegmentOverEveryHost) {
  for (uint32_t hosts = 2; hosts <= 9; ++hosts) {
    // contributions[host][segment]: the hosts whose inputs it holds.
    std::vector<std::vector<std::set<uint32_t>>> held(hosts,
                                                      std::vector<std::set<uint32_t>>(hosts));
    for (uint32_t host = 0; host < hosts; ++host) {
      for (uint32_t segment = 0; segment < hosts; ++segment) held[host][segment] = {host};
    }
    for (uint32_t step = 0; step + 1 < hosts; ++step) {
      auto before = held;
      for (uint32_t host = 0; host < hosts; ++host) {
        const RingStep mine = RingReduceScatterStep(host, hosts, step);
        const RingStep left = RingReduceScatterStep((host + hosts - 1) % hosts, hosts, step);
        ASSERT_EQ(left.send_segment, mine.receive_segment);
        if (step > 0) {
          ASSERT_EQ(mine.send_segment, RingReduceScatterStep(host, hosts, step - 1).receive_segment);
        }
        const auto& incoming = before[(host + hosts - 1) % hosts][left.send_segment];
        held[host][mine.receive_segment].insert(incoming.begin(), incoming.end());
      }
    }
    for (uint32_t host = 0; host < hosts; ++host) {
      ASSERT_EQ(held[host][RingReducedSegment(host, hosts)].size(), hosts) << hosts << " " << host;
      ASSERT_EQ(RingAllGatherStep(host, hosts, 0).send_segment, RingReducedSegment(host, hosts));
    }
    // The all-gather: every host receives every segment but its own once.
    for (uint32_t host = 0; host < hosts; ++host) {
      std::set<uint32_t> received;
      for (uint32_t step = 0; step + 1 < hosts; ++step) {
        const RingStep mine = RingAllGatherStep(host, hosts, step);
        ASSERT_EQ(RingAllGatherStep((host + hosts - 1) % hosts, hosts, step).send_segment,
                  mine.receive_segment);
        if (step > 0) {
          ASSERT_EQ(mine.send_segment, RingAllGatherStep(host, hosts, step - 1).receive_segment);
        }
        received.insert(mine.receive_segment);
      }
      EXPECT_EQ(received.size(), hosts - 1);
      EXPECT_FALSE(received.contains(RingReducedSegment(host, hosts)));
    }
  }
}

TEST(HostAlgorithmTest, RecursiveDoublingPairsHostsAndFoldsTheExtraOnes) {
  for (uint32_t hosts = 2; hosts <= 12; ++hosts) {
    std::vector<std::set<uint32_t>> held(hosts);
    std::vector<DoublingPlan> plans;
    for (uint32_t host = 0; host < hosts; ++host) {
      held[host] = {host};
      plans.push_back(PlanRecursiveDoubling(host, hosts));
    }
    for (uint32_t host = 0; host < hosts; ++host) {
      if (plans[host].has_fold_partner) {
        const DoublingPlan& partner = plans[plans[host].fold_partner];
        ASSERT_TRUE(partner.has_fold_partner);
        ASSERT_EQ(partner.fold_partner, host);
        ASSERT_NE(partner.extra, plans[host].extra);
        if (!plans[host].extra) held[host].insert(plans[host].fold_partner);
      }
    }
    const size_t exchanges = plans[0].partners.size();
    for (size_t exchange = 0; exchange < exchanges; ++exchange) {
      auto before = held;
      for (uint32_t host = 0; host < hosts; ++host) {
        if (plans[host].extra) continue;
        const uint32_t partner = plans[host].partners[exchange];
        ASSERT_EQ(plans[partner].partners[exchange], host);
        held[host].insert(before[partner].begin(), before[partner].end());
      }
    }
    for (uint32_t host = 0; host < hosts; ++host) {
      if (plans[host].extra) continue;
      ASSERT_EQ(held[host].size(), hosts) << hosts << " " << host;
    }
  }
  EXPECT_THAT(PlanRecursiveDoubling(2, 8).partners, ElementsAre(3, 0, 6));
  EXPECT_TRUE(PlanRecursiveDoubling(5, 6).extra);
}

TEST(RingProgressTest, APieceIsReadyOnceEveryByteArrivedInAnyOrderAndCut) {
  internal::RingProgress progress({{100, 130}, {0, 0}}, 10);
  EXPECT_EQ(progress.pieces(0), 3u);
  EXPECT_EQ(progress.pieces(1), 0u);
  EXPECT_EQ(progress.Piece(0, 2), std::make_pair(uint64_t{120}, uint64_t{130}));
  // Across the pieces' boundaries, out of order.
  ASSERT_TRUE(progress.Arrived(0, 115, 15).ok());
  EXPECT_EQ(progress.WaitForPiece(0, 2, absl::Now()).code(), absl::StatusCode::kOk);
  EXPECT_EQ(progress.WaitForPiece(0, 1, absl::Now()).code(),
            absl::StatusCode::kDeadlineExceeded);
  std::thread late([&] { ASSERT_TRUE(progress.Arrived(0, 100, 15).ok()); });
  EXPECT_TRUE(progress.WaitForPiece(0, 1, absl::InfiniteFuture()).ok());
  late.join();
  EXPECT_TRUE(progress.WaitForPiece(0, 0, absl::Now()).ok());
  EXPECT_THAT(progress.Arrived(0, 105, 1).message(), HasSubstr("arrived twice"));
}

TEST(RingProgressTest, FailWakesWaiters) {
  internal::RingProgress progress({{0, 64}}, 16);
  std::thread failer([&] { progress.Fail(absl::AbortedError("host 2 left")); });
  EXPECT_EQ(progress.WaitForPiece(0, 3, absl::InfiniteFuture()).message(), "host 2 left");
  failer.join();
}

}  // namespace
}  // namespace neuron::rtd::collectives

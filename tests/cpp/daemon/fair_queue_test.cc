// The fair queue's decisions, driven by hand: which session's turn comes
// next given the device time each used, weights and priorities; that idle
// time banks no credit; that priority buys latency but not share.
#include "daemon/queue/fair_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <vector>

namespace neuron::rtd::queue {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

FairQueueOptions Options() {
  return FairQueueOptions{.quantum = milliseconds(2),
                          .priority_lead = milliseconds(100),
                          .priority_aging = milliseconds(20)};
}

Contender Session(uint64_t id, uint32_t weight = 1, int priority = 0) {
  return Contender{.session_id = id, .weight = weight, .priority = priority};
}

TEST(FairQueueTest, TheSessionThatUsedLeastDeviceTimeGoesNext) {
  FairQueue fair(Options());
  std::vector<Contender> contenders = {Session(1), Session(2), Session(3)};
  fair.Pick(contenders);
  fair.Charge(1, 1, milliseconds(18));
  fair.Charge(2, 1, milliseconds(5));
  fair.Charge(3, 1, milliseconds(9));
  EXPECT_EQ(contenders[fair.Pick(contenders)].session_id, 2u);
  fair.Charge(2, 1, milliseconds(10));
  EXPECT_EQ(contenders[fair.Pick(contenders)].session_id, 3u);
}

TEST(FairQueueTest, ALightSessionIsPickedWheneverItHasWork) {
  // Three hogs run 18 ms commands; the light session's few microseconds a
  // turn never catch up with them.
  FairQueue fair(Options());
  std::vector<Contender> all = {Session(1), Session(2), Session(3), Session(4)};
  std::vector<Contender> hogs = {Session(1), Session(2), Session(3)};
  for (int round = 0; round < 50; ++round) {
    const bool light_ready = round >= 3 && round % 3 == 0;
    const std::vector<Contender>& contenders = light_ready ? all : hogs;
    const uint64_t picked = contenders[fair.Pick(contenders)].session_id;
    if (light_ready) {
      EXPECT_EQ(picked, 4u) << "round " << round;
      fair.Charge(picked, 1, std::chrono::microseconds(300));
    } else {
      fair.Charge(picked, 1, milliseconds(18));
    }
  }
}

TEST(FairQueueTest, WeightsShareDeviceTimeInProportion) {
  FairQueue fair(Options());
  std::vector<Contender> contenders = {Session(1, 1), Session(2, 2), Session(3, 4)};
  std::map<uint64_t, nanoseconds> used;
  for (int i = 0; i < 7000; ++i) {
    const Contender& picked = contenders[fair.Pick(contenders)];
    fair.Charge(picked.session_id, picked.weight, milliseconds(1));
    used[picked.session_id] += milliseconds(1);
  }
  const double total = static_cast<double>((used[1] + used[2] + used[3]).count());
  EXPECT_NEAR(used[1].count() / total, 1.0 / 7, 0.01);
  EXPECT_NEAR(used[2].count() / total, 2.0 / 7, 0.01);
  EXPECT_NEAR(used[3].count() / total, 4.0 / 7, 0.01);
  EXPECT_EQ(fair.used(3), used[3]);
}

TEST(FairQueueTest, ASleepingSessionBanksNoMoreThanOneQuantum) {
  FairQueue fair(Options());
  std::vector<Contender> both = {Session(1), Session(2)};
  std::vector<Contender> alone = {Session(1)};
  fair.Pick(both);
  // Session 2 sleeps while session 1 runs for a second.
  for (int i = 0; i < 1000; ++i) {
    fair.Pick(alone);
    fair.Charge(1, 1, milliseconds(1));
  }
  fair.Pick(both);
  // One quantum behind the clock, which lags session 1 by its last command.
  EXPECT_GE(fair.virtual_time(2), fair.virtual_time(1) - milliseconds(3));
  // So it gets about a quantum's head start, then they alternate.
  int session2_in_a_row = 0;
  while (both[fair.Pick(both)].session_id == 2 && session2_in_a_row < 100) {
    fair.Charge(2, 1, milliseconds(1));
    ++session2_in_a_row;
  }
  EXPECT_LE(session2_in_a_row, 3);
}

TEST(FairQueueTest, ANewSessionStartsLevelWithTheOthers) {
  FairQueue fair(Options());
  std::vector<Contender> one = {Session(1)};
  for (int i = 0; i < 100; ++i) {
    fair.Pick(one);
    fair.Charge(1, 1, milliseconds(10));
  }
  std::vector<Contender> two = {Session(1), Session(2)};
  fair.Pick(two);
  // Level with the clock, which lags session 1 by its last command.
  EXPECT_GE(fair.virtual_time(2), fair.virtual_time(1) - milliseconds(10));
}

// A session alone keeps the core for as long as it has work, in one turn:
// one pick, many charges.
TEST(FairQueueTest, ANewcomerIsNotOwedTheTurnASessionHadAlone) {
  FairQueue fair(Options());
  std::vector<Contender> one = {Session(1)};
  fair.Pick(one);
  for (int i = 0; i < 100; ++i) fair.Charge(1, 1, milliseconds(10));
  std::vector<Contender> two = {Session(1), Session(2)};
  fair.Pick(two);
  EXPECT_GE(fair.virtual_time(2), fair.virtual_time(1) - milliseconds(2));
  int newcomer_in_a_row = 0;
  while (two[fair.Pick(two)].session_id == 2 && newcomer_in_a_row < 200) {
    fair.Charge(2, 1, milliseconds(10));
    ++newcomer_in_a_row;
  }
  EXPECT_LE(newcomer_in_a_row, 1);
}

TEST(FairQueueTest, ASleeperBanksNoMoreThanOneQuantumOfALongTurn) {
  FairQueue fair(Options());
  std::vector<Contender> both = {Session(1), Session(2)};
  std::vector<Contender> alone = {Session(1)};
  fair.Pick(both);
  fair.Pick(alone);
  for (int i = 0; i < 1000; ++i) fair.Charge(1, 1, milliseconds(1));
  fair.Pick(both);
  EXPECT_GE(fair.virtual_time(2), fair.virtual_time(1) - milliseconds(2));
}

TEST(FairQueueTest, AHigherPriorityStreamJumpsTheOrderWithinItsLead) {
  FairQueue fair(Options());
  std::vector<Contender> contenders = {Session(1), Session(2)};
  fair.Pick(contenders);
  fair.Charge(2, 1, milliseconds(50));  // session 2 is ahead, but within its lead
  contenders[1].priority = -1;
  EXPECT_EQ(contenders[fair.Pick(contenders)].session_id, 2u);
  EXPECT_TRUE(fair.ShouldYield(contenders[0], nanoseconds(0), {&contenders[1], 1}));
}

TEST(FairQueueTest, PriorityBuysLatencyNotAShareBeyondTheLead) {
  FairQueue fair(Options());
  std::vector<Contender> contenders = {Session(1), Session(2, 1, -3)};
  std::map<uint64_t, nanoseconds> used;
  for (int i = 0; i < 2000; ++i) {
    const Contender& picked = contenders[fair.Pick(contenders)];
    fair.Charge(picked.session_id, 1, milliseconds(1));
    used[picked.session_id] += milliseconds(1);
  }
  // Session 2 ran ahead by its lead, then only its share.
  EXPECT_NEAR(static_cast<double>((used[2] - used[1]).count()),
              static_cast<double>(nanoseconds(milliseconds(100)).count()),
              static_cast<double>(nanoseconds(milliseconds(2)).count()));
  fair.Charge(2, 1, milliseconds(10));
  EXPECT_FALSE(fair.ShouldYield(contenders[0], nanoseconds(0), {&contenders[1], 1}));
}

TEST(FairQueueTest, ATurnEndsAfterItsQuantumOnlyWhenOthersWait) {
  FairQueue fair(Options());
  const Contender running = Session(1);
  const Contender other = Session(2);
  EXPECT_FALSE(fair.ShouldYield(running, milliseconds(1), {&other, 1}));
  EXPECT_TRUE(fair.ShouldYield(running, milliseconds(2), {&other, 1}));
  EXPECT_FALSE(fair.ShouldYield(running, milliseconds(500), {}));
}

TEST(FairQueueTest, OnlyASessionWithinItsShareIsOwed) {
  FairQueue fair(Options());
  std::vector<Contender> contenders = {Session(1), Session(2)};
  fair.Pick(contenders);
  fair.Charge(1, 1, milliseconds(5));
  ASSERT_EQ(contenders[fair.Pick(contenders)].session_id, 2u);
  // Session 2 may run until it has caught up with session 1.
  fair.Charge(2, 1, milliseconds(4));
  EXPECT_TRUE(fair.Owed(2));
  fair.Charge(2, 1, milliseconds(2));
  EXPECT_FALSE(fair.Owed(2));
  // Alone, a session is always owed.
  std::vector<Contender> alone = {Session(1)};
  fair.Pick(alone);
  EXPECT_TRUE(fair.Owed(1));
}

TEST(FairQueueTest, TheCoreWaitsForAnOwedSessionAsLongAsTheOthersCommandsTake) {
  FairQueue fair(Options());
  const nanoseconds longest_wait = std::chrono::microseconds(100);
  std::vector<Contender> contenders = {Session(1), Session(2), Session(3)};
  fair.Pick(contenders);
  // Session 2's commands take 18 ms, session 3's 2 us (a batch of 10 in 20).
  fair.Charge(2, 1, milliseconds(18));
  fair.Charge(3, 1, std::chrono::microseconds(20), 10);
  ASSERT_EQ(contenders[fair.Pick(contenders)].session_id, 1u);
  fair.Charge(1, 1, std::chrono::microseconds(10));
  const Contender with_long[] = {Session(2), Session(3)};
  const Contender with_tiny[] = {Session(3)};
  const nanoseconds turn = std::chrono::microseconds(10);
  // Beside an 18 ms command, the whole window.
  EXPECT_EQ(fair.AnticipationWindow(1, turn, with_long, longest_wait), longest_wait);
  // Beside 2 us commands, no longer than one of them: waiting longer would
  // idle the core while their work piles up.
  EXPECT_EQ(fair.AnticipationWindow(1, turn, with_tiny, longest_wait),
            std::chrono::microseconds(2));
  // Nothing known of the others yet: hand over.
  const Contender unknown[] = {Session(9)};
  EXPECT_EQ(fair.AnticipationWindow(1, turn, unknown, longest_wait), nanoseconds{0});
  // Its quantum used, or ahead of its share: hand over.
  EXPECT_EQ(fair.AnticipationWindow(1, milliseconds(2), with_long, longest_wait), nanoseconds{0});
  fair.Charge(1, 1, milliseconds(30));
  EXPECT_EQ(fair.AnticipationWindow(1, turn, with_long, longest_wait), nanoseconds{0});
}

TEST(FairQueueTest, ATypicalCommandIsAMovingAverageNotTheLastCommand) {
  FairQueue fair(Options());
  std::vector<Contender> contenders = {Session(1), Session(2)};
  fair.Pick(contenders);
  for (int i = 0; i < 50; ++i) fair.Charge(2, 1, milliseconds(8));
  fair.Charge(2, 1, std::chrono::microseconds(1));  // one odd short command
  ASSERT_EQ(contenders[fair.Pick(contenders)].session_id, 1u);
  const Contender other[] = {Session(2)};
  EXPECT_GT(fair.AnticipationWindow(1, nanoseconds{0}, other, milliseconds(100)),
            milliseconds(6));
}

TEST(FairQueueTest, ARefundTakesBackDeviceTimeTheSessionDidNotUse) {
  FairQueue fair(Options());
  std::vector<Contender> contenders = {Session(1, 2), Session(2)};
  fair.Pick(contenders);
  const nanoseconds before = fair.virtual_time(1);
  fair.Charge(1, 2, milliseconds(10));
  fair.Refund(1, 2, milliseconds(6));
  EXPECT_EQ(fair.used(1), milliseconds(4));
  EXPECT_EQ(fair.virtual_time(1) - before, milliseconds(2));
  // Never more than was charged.
  fair.Refund(1, 2, milliseconds(60));
  EXPECT_EQ(fair.used(1), nanoseconds{0});
  EXPECT_EQ(fair.virtual_time(1), before);
}

TEST(FairQueueTest, AgingRaisesAWaitingStreamsPriorityUpToTheHighest) {
  const nanoseconds aging = milliseconds(20);
  EXPECT_EQ(AgedPriority(0, -3, milliseconds(0), aging), 0);
  EXPECT_EQ(AgedPriority(0, -3, milliseconds(19), aging), 0);
  EXPECT_EQ(AgedPriority(0, -3, milliseconds(20), aging), -1);
  EXPECT_EQ(AgedPriority(0, -3, milliseconds(45), aging), -2);
  EXPECT_EQ(AgedPriority(0, -3, std::chrono::seconds(10), aging), -3);
  EXPECT_EQ(AgedPriority(-3, -3, std::chrono::seconds(10), aging), -3);
}

TEST(FairQueueTest, AForgottenSessionComesBackLevel) {
  FairQueue fair(Options());
  std::vector<Contender> contenders = {Session(1), Session(2)};
  fair.Pick(contenders);
  fair.Charge(1, 1, milliseconds(500));
  fair.Charge(2, 1, milliseconds(10));
  fair.Forget(1);
  EXPECT_EQ(fair.used(1), nanoseconds(0));
}

}  // namespace
}  // namespace neuron::rtd::queue

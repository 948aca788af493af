// Communicators end to end: ranks are sessions of one daemon (here, of one
// test process, each on its own thread where a call blocks).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <thread>

#include "data_plane_fixture.h"

namespace neuron {
namespace {

using ::testing::HasSubstr;

// One rank: a session, a stream on core `core` and a device buffer.
struct Rank {
  std::unique_ptr<neuronrt::Session> session;
  std::shared_ptr<neuronrt::Stream> stream;
  neuronrt::DeviceBuffer buffer;
  uint64_t handle = 0;

  void Put(const std::vector<float>& values, uint64_t offset = 0) {
    ASSERT_TRUE(stream->CopyToDevice(buffer.device_address + offset, values.data(),
                                     values.size() * sizeof(float))
                    .ok());
  }
  std::vector<float> Get(size_t count, uint64_t offset = 0) {
    std::vector<float> values(count);
    EXPECT_TRUE(
        stream->CopyToHost(values.data(), buffer.device_address + offset, count * sizeof(float))
            .ok());
    return values;
  }
};

neuron_rtd_collective_op Op(uint32_t kind, uint64_t send, uint64_t recv, uint64_t count,
                            uint32_t reduce = NEURON_RTD_REDUCE_NONE, uint32_t peer = 0,
                            uint64_t sequence = 0) {
  return neuron_rtd_collective_op{.kind = kind,
                                  .reduce_op = reduce,
                                  .dtype = NEURON_RTD_DTYPE_FLOAT32,
                                  .peer = peer,
                                  .send_address = send,
                                  .recv_address = recv,
                                  .element_count = count,
                                  .scale = 0,
                                  .sequence = sequence};
}

class CollectivesTest : public DataPlaneTest {
 protected:
  // `size` ranks of one communicator, rank i on core i % 2.
  std::vector<Rank> Ranks(uint32_t size, absl::Duration operation_timeout = absl::Minutes(5)) {
    std::vector<Rank> ranks(size);
    for (uint32_t i = 0; i < size; ++i) {
      ranks[i].session = Open(absl::StrCat("rank", i));
      auto stream = ranks[i].session->CreateStream(i % 2);
      EXPECT_TRUE(stream.ok()) << stream.status();
      ranks[i].stream = *stream;
      auto buffer = ranks[i].session->Allocate(i % 2, kMiB);
      EXPECT_TRUE(buffer.ok()) << buffer.status();
      ranks[i].buffer = *buffer;
    }
    auto id = ranks[0].session->CreateCommunicatorId();
    EXPECT_TRUE(id.ok()) << id.status();
    std::vector<std::thread> joins;
    for (uint32_t i = 0; i < size; ++i) {
      joins.emplace_back([&, i] {
        auto joined = ranks[i].session->InitCommunicator(*id, i, size, absl::Seconds(30),
                                                         operation_timeout);
        ASSERT_TRUE(joined.ok()) << joined.status();
        ranks[i].handle = joined->handle;
      });
    }
    for (std::thread& join : joins) join.join();
    return ranks;
  }
};

TEST_F(CollectivesTest, AllReduceSumsEveryRanksBufferIntoEveryRank) {
  std::vector<Rank> ranks = Ranks(3);
  for (uint32_t i = 0; i < 3; ++i) ranks[i].Put({1.0f * (i + 1), 10.0f * (i + 1)});
  for (Rank& rank : ranks) {
    const uint64_t address = rank.buffer.device_address;
    neuron_rtd_collective_op op =
        Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, address, address, 2, NEURON_RTD_REDUCE_SUM);
    ASSERT_TRUE(rank.stream->Collective(rank.handle, {&op, 1}, "all_reduce").ok());
  }
  for (Rank& rank : ranks) EXPECT_EQ(rank.Get(2), (std::vector<float>{6, 60}));
}

TEST_F(CollectivesTest, ReduceOpsAverageAndPremultiply) {
  std::vector<Rank> ranks = Ranks(2);
  ranks[0].Put({1, 8});
  ranks[1].Put({3, 2});
  for (Rank& rank : ranks) {
    const uint64_t address = rank.buffer.device_address;
    neuron_rtd_collective_op ops[3] = {
        Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, address, address + 64, 2, NEURON_RTD_REDUCE_AVG, 0,
           0),
        Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, address, address + 128, 2, NEURON_RTD_REDUCE_MAX, 0,
           1),
        Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, address, address + 192, 2,
           NEURON_RTD_REDUCE_PREMUL_SUM, 0, 2)};
    ops[2].scale = 0.5;
    ASSERT_TRUE(rank.stream->Collective(rank.handle, ops).ok());
  }
  for (Rank& rank : ranks) {
    EXPECT_EQ(rank.Get(2, 64), (std::vector<float>{2, 5}));
    EXPECT_EQ(rank.Get(2, 128), (std::vector<float>{3, 8}));
    EXPECT_EQ(rank.Get(2, 192), (std::vector<float>{2, 5}));
  }
}

TEST_F(CollectivesTest, AllGatherReduceScatterAndBroadcastPlaceEachRanksShare) {
  std::vector<Rank> ranks = Ranks(2);
  ranks[0].Put({1, 2, 3, 4});
  ranks[1].Put({10, 20, 30, 40});
  for (uint32_t i = 0; i < 2; ++i) {
    const uint64_t base = ranks[i].buffer.device_address;
    neuron_rtd_collective_op ops[3] = {
        Op(NEURON_RTD_COLLECTIVE_ALL_GATHER, base, base + 1024, 2),
        Op(NEURON_RTD_COLLECTIVE_REDUCE_SCATTER, base, base + 2048, 2, NEURON_RTD_REDUCE_SUM, 0,
           1),
        Op(NEURON_RTD_COLLECTIVE_BROADCAST, base, base + 3072, 4, NEURON_RTD_REDUCE_NONE,
           /*peer=*/1, 2)};
    ASSERT_TRUE(ranks[i].stream->Collective(ranks[i].handle, ops).ok());
  }
  for (Rank& rank : ranks) {
    EXPECT_EQ(rank.Get(4, 1024), (std::vector<float>{1, 2, 10, 20}));
    EXPECT_EQ(rank.Get(4, 3072), (std::vector<float>{10, 20, 30, 40}));
  }
  EXPECT_EQ(ranks[0].Get(2, 2048), (std::vector<float>{11, 22}));
  EXPECT_EQ(ranks[1].Get(2, 2048), (std::vector<float>{33, 44}));
}

TEST_F(CollectivesTest, RanksThatEachSendThenReceiveInOneGroupDoNotDeadlock) {
  std::vector<Rank> ranks = Ranks(2);
  ranks[0].Put({1, 2});
  ranks[1].Put({3, 4});
  for (uint32_t i = 0; i < 2; ++i) {
    const uint64_t base = ranks[i].buffer.device_address;
    neuron_rtd_collective_op ops[2] = {
        Op(NEURON_RTD_COLLECTIVE_SEND, base, 0, 2, NEURON_RTD_REDUCE_NONE, 1 - i),
        Op(NEURON_RTD_COLLECTIVE_RECV, 0, base + 64, 2, NEURON_RTD_REDUCE_NONE, 1 - i)};
    ASSERT_TRUE(ranks[i].stream->Collective(ranks[i].handle, ops).ok());
  }
  EXPECT_EQ(ranks[0].Get(2, 64), (std::vector<float>{3, 4}));
  EXPECT_EQ(ranks[1].Get(2, 64), (std::vector<float>{1, 2}));
}

TEST_F(CollectivesTest, CollectivesMatchByIssueOrderNotByWhenTheirStreamsReachThem) {
  std::vector<Rank> ranks = Ranks(2);
  ranks[0].Put({1, 2});
  ranks[1].Put({3, 4});
  auto other_stream = ranks[0].session->CreateStream(0);
  ASSERT_TRUE(other_stream.ok());
  const uint64_t a = ranks[0].buffer.device_address;
  const uint64_t b = ranks[1].buffer.device_address;
  // Rank 0's collective #1 reaches the daemon before its #0; rank 1's come
  // in order. Matched by arrival they would pair an all-gather with an
  // all-reduce.
  neuron_rtd_collective_op a_reduce =
      Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, a, a + 64, 2, NEURON_RTD_REDUCE_SUM, 0, 1);
  neuron_rtd_collective_op a_gather = Op(NEURON_RTD_COLLECTIVE_ALL_GATHER, a, a + 128, 2);
  neuron_rtd_collective_op b_gather = Op(NEURON_RTD_COLLECTIVE_ALL_GATHER, b, b + 128, 2);
  neuron_rtd_collective_op b_reduce =
      Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, b, b + 64, 2, NEURON_RTD_REDUCE_SUM, 0, 1);
  ASSERT_TRUE((*other_stream)->Collective(ranks[0].handle, {&a_reduce, 1}).ok());
  ASSERT_TRUE(ranks[0].stream->Collective(ranks[0].handle, {&a_gather, 1}).ok());
  ASSERT_TRUE(ranks[1].stream->Collective(ranks[1].handle, {&b_gather, 1}).ok());
  ASSERT_TRUE(ranks[1].stream->Collective(ranks[1].handle, {&b_reduce, 1}).ok());
  ASSERT_TRUE((*other_stream)->Synchronize().ok());
  for (Rank& rank : ranks) {
    EXPECT_EQ(rank.Get(2, 64), (std::vector<float>{4, 6}));
    EXPECT_EQ(rank.Get(4, 128), (std::vector<float>{1, 2, 3, 4}));
  }
  // A rank that numbers two collectives alike breaks the matching for all:
  // the communicator is aborted, and what waits in it fails at once.
  neuron_rtd_collective_op waiting =
      Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, a, a, 2, NEURON_RTD_REDUCE_SUM, 0, 2);
  auto peer = ranks[0].stream->Collective(ranks[0].handle, {&waiting, 1});
  ASSERT_TRUE(peer.ok());
  neuron_rtd_collective_op again =
      Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, b, b, 2, NEURON_RTD_REDUCE_SUM, 0, 7);
  neuron_rtd_collective_op twice[2] = {again, again};
  ASSERT_TRUE(ranks[1].stream->Collective(ranks[1].handle, twice).ok());
  EXPECT_THAT(ranks[1].stream->Synchronize().message(), HasSubstr("issued collective #7 twice"));
  EXPECT_THAT(peer->Synchronize().message(), HasSubstr("issued collective #7 twice"));
}

TEST_F(CollectivesTest, MismatchedCollectivesFailOnEveryRankNamingBoth) {
  std::vector<Rank> ranks = Ranks(2);
  const uint64_t a = ranks[0].buffer.device_address;
  const uint64_t b = ranks[1].buffer.device_address;
  neuron_rtd_collective_op reduce =
      Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, a, a, 4, NEURON_RTD_REDUCE_SUM);
  neuron_rtd_collective_op gather = Op(NEURON_RTD_COLLECTIVE_ALL_GATHER, b, b + 64, 4);
  ASSERT_TRUE(ranks[0].stream->Collective(ranks[0].handle, {&reduce, 1}).ok());
  ASSERT_TRUE(ranks[1].stream->Collective(ranks[1].handle, {&gather, 1}).ok());
  for (Rank& rank : ranks) {
    absl::Status status = rank.stream->Synchronize();
    EXPECT_THAT(status.message(), HasSubstr("rank 0 issued ALL_REDUCE"));
    EXPECT_THAT(status.message(), HasSubstr("rank 1 issued ALL_GATHER"));
  }
}

TEST_F(CollectivesTest, ARankWhoseSessionEndsFailsWhatItsPeersWaitOn) {
  std::vector<Rank> ranks = Ranks(2);
  const uint64_t a = ranks[0].buffer.device_address;
  neuron_rtd_collective_op op = Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, a, a, 4, NEURON_RTD_REDUCE_SUM);
  auto waiting = ranks[0].stream->Collective(ranks[0].handle, {&op, 1});
  ASSERT_TRUE(waiting.ok());
  ASSERT_TRUE(ranks[1].session->Close().ok());
  absl::Status status = waiting->Synchronize();
  EXPECT_THAT(status.message(), HasSubstr("rank 1 (session"));
  EXPECT_THAT(status.message(), HasSubstr("left"));
}

TEST_F(CollectivesTest, ARankWhoseStreamFailedAbortsTheGroupInsteadOfLettingPeersWait) {
  std::vector<Rank> ranks = Ranks(2);
  const uint64_t a = ranks[0].buffer.device_address;
  const uint64_t b = ranks[1].buffer.device_address;
  neuron_rtd_collective_op waiting = Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, b, b, 4,
                                        NEURON_RTD_REDUCE_SUM);
  auto peer = ranks[1].stream->Collective(ranks[1].handle, {&waiting, 1});
  ASSERT_TRUE(peer.ok());
  // Rank 0's stream fails (an unknown communicator), then reaches its
  // collective, which it never posts. A gate holds the stream until both
  // are queued (a client refuses to queue on a stream it knows failed).
  auto gate = ranks[0].session->CreateStream(0);
  ASSERT_TRUE(gate.ok());
  ASSERT_TRUE(ranks[0].stream->Wait((*gate)->EventAt(1)).ok());
  neuron_rtd_collective_op op = Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, a, a, 4,
                                   NEURON_RTD_REDUCE_SUM);
  ASSERT_TRUE(ranks[0].stream->Collective(ranks[0].handle + 1000, {&op, 1}).ok());
  ASSERT_TRUE(ranks[0].stream->Collective(ranks[0].handle, {&op, 1}).ok());
  const float one = 1;
  ASSERT_TRUE((*gate)->CopyToDevice(a + 512, &one, sizeof(one)).ok());
  EXPECT_FALSE(ranks[0].stream->Synchronize().ok());
  absl::Status status = peer->Synchronize();
  EXPECT_THAT(status.message(), HasSubstr("rank 0's stream failed before its ALL_REDUCE"));
}

TEST_F(CollectivesTest, AnOperationWhosePeerNeverComesTimesOutNamingTheRank) {
  std::vector<Rank> ranks = Ranks(2, absl::Milliseconds(200));
  const uint64_t a = ranks[0].buffer.device_address;
  neuron_rtd_collective_op op = Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, a, a, 4, NEURON_RTD_REDUCE_SUM);
  auto waiting = ranks[0].stream->Collective(ranks[0].handle, {&op, 1});
  ASSERT_TRUE(waiting.ok());
  absl::Status status = waiting->Synchronize();
  EXPECT_THAT(status.message(), HasSubstr("timed out"));
  EXPECT_THAT(status.message(), HasSubstr("for rank(s) 1"));
  // The communicator stays aborted: later operations fail at once.
  const uint64_t b = ranks[1].buffer.device_address;
  neuron_rtd_collective_op own = Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, b, b, 4, NEURON_RTD_REDUCE_SUM);
  auto later = ranks[1].stream->Collective(ranks[1].handle, {&own, 1});
  ASSERT_TRUE(later.ok());
  EXPECT_THAT(ranks[1].stream->Synchronize().message(), HasSubstr("timed out"));
  // Counted as timed out, apart from other failures.
  auto stats = Admin()->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  uint64_t timed_out = 0;
  uint64_t collectives_timed_out = 0;
  for (const neuronrt::CoreStats& core : stats->cores) {
    timed_out += core.executions_timed_out;
    for (const neuronrt::CommandCount& count : core.commands) {
      if (count.kind == "collective" && count.outcome == "timed_out") {
        collectives_timed_out += count.count;
      }
    }
  }
  EXPECT_EQ(timed_out, 2u);
  EXPECT_EQ(collectives_timed_out, 2u);
}

TEST_F(CollectivesTest, BuffersOfAnotherSessionAndUnknownHandlesAreRefused) {
  std::vector<Rank> ranks = Ranks(2);
  // Rank 0 names rank 1's buffer: the daemon checks it against rank 0's own
  // segments.
  const uint64_t theirs = ranks[1].buffer.device_address;
  neuron_rtd_collective_op op =
      Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, theirs, theirs, 4, NEURON_RTD_REDUCE_SUM);
  ASSERT_TRUE(ranks[0].stream->Collective(ranks[0].handle, {&op, 1}).ok());
  EXPECT_THAT(ranks[0].stream->Synchronize().message(), HasSubstr("send buffer"));
  auto fresh = ranks[1].session->CreateStream(1);
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE((*fresh)->Collective(ranks[1].handle + 1000, {&op, 1}).ok());
  EXPECT_THAT((*fresh)->Synchronize().message(), HasSubstr("is not one this session joined"));
}

TEST_F(CollectivesTest, TheAdminListsCommunicatorsWithTheirRanksAndProgress) {
  std::vector<Rank> ranks = Ranks(2);
  neuron_rtd_collective_op barrier{.kind = NEURON_RTD_COLLECTIVE_BARRIER};
  for (Rank& rank : ranks) ASSERT_TRUE(rank.stream->Collective(rank.handle, {&barrier, 1}).ok());
  for (Rank& rank : ranks) ASSERT_TRUE(rank.stream->Synchronize().ok());
  auto listed = Admin()->ListCommunicators();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  const neuronrt::CommunicatorInfo& info = listed->front();
  EXPECT_EQ(info.size, 2u);
  EXPECT_EQ(info.collectives_completed, 1u);
  EXPECT_EQ(info.operations_pending, 0u);
  EXPECT_TRUE(info.aborted.empty());
  ASSERT_EQ(info.members.size(), 2u);
  EXPECT_THAT(info.members[1], HasSubstr(absl::StrCat("session ", ranks[1].session->id())));
  ASSERT_TRUE(ranks[0].session->DestroyCommunicator(ranks[0].handle).ok());
  listed = Admin()->ListCommunicators();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_THAT(listed->front().aborted, HasSubstr("rank 0"));
}

TEST_F(CollectivesTest, TheDaemonsStatsCountCollectivesByKindOutcomeAndBytes) {
  std::vector<Rank> ranks = Ranks(2);
  for (Rank& rank : ranks) {
    const uint64_t address = rank.buffer.device_address;
    neuron_rtd_collective_op op =
        Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE, address, address, 4, NEURON_RTD_REDUCE_SUM);
    ASSERT_TRUE(rank.stream->Collective(rank.handle, {&op, 1}).ok());
  }
  for (Rank& rank : ranks) ASSERT_TRUE(rank.stream->Synchronize().ok());
  neuron_rtd_collective_op reduce = Op(NEURON_RTD_COLLECTIVE_ALL_REDUCE,
                                       ranks[0].buffer.device_address,
                                       ranks[0].buffer.device_address, 4, NEURON_RTD_REDUCE_SUM);
  neuron_rtd_collective_op gather = Op(NEURON_RTD_COLLECTIVE_ALL_GATHER,
                                       ranks[1].buffer.device_address,
                                       ranks[1].buffer.device_address + 64, 4);
  ASSERT_TRUE(ranks[0].stream->Collective(ranks[0].handle, {&reduce, 1}).ok());
  ASSERT_TRUE(ranks[1].stream->Collective(ranks[1].handle, {&gather, 1}).ok());
  for (Rank& rank : ranks) EXPECT_FALSE(rank.stream->Synchronize().ok());

  auto stats = Admin()->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->daemon.communicators_live, 1u);
  std::map<std::string, neuronrt::CollectiveCount> by_outcome;
  for (const neuronrt::CollectiveCount& count : stats->daemon.collectives) {
    EXPECT_EQ(count.kind, "all_reduce");
    by_outcome[count.outcome] = count;
  }
  ASSERT_EQ(by_outcome.size(), 2u);
  EXPECT_EQ(by_outcome["completed"].count, 1u);
  EXPECT_EQ(by_outcome["completed"].bytes, 2u * 4u * sizeof(float));  // written to each rank
  EXPECT_EQ(by_outcome["failed"].count, 1u);  // the ranks disagreed: rank 0's kind counts
}

TEST_F(CollectivesTest, JoiningNeedsAnIdOfThisDaemonAndEveryRankInTime) {
  auto session = Open();
  auto unknown = session->InitCommunicator(std::string(32, 'x'), 0, 2, absl::Seconds(1),
                                           absl::Seconds(1));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  auto id = session->CreateCommunicatorId();
  ASSERT_TRUE(id.ok());
  auto alone = session->InitCommunicator(*id, 1, 3, absl::Milliseconds(100), absl::Seconds(1));
  EXPECT_EQ(alone.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(alone.status().message(), HasSubstr("rank(s) 0,2 of 3 did not join"));
}

}  // namespace
}  // namespace neuron

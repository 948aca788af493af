// Communicators that span hosts, two in one process over tcp;ofi_rxm on the
// loopback interface, on the simulated device; and a third endpoint that
// plays a hostile peer who knows the group key.
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "daemon/collectives/communicator.h"
#include "daemon/collectives/fabric_router.h"
#include "daemon/common/os_sys_calls.h"
#include "daemon/fabric/libfabric_transport.h"
#include "daemon/hal/backend_factory.h"
#include "daemon/memory/memory_manager.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neuron::rtd::collectives {
namespace {

using ::testing::HasSubstr;

fabric::FabricOptions Loopback() {
  return {.provider = "tcp;ofi_rxm", .interface = "lo", .send_buffers = 8, .receive_buffers = 16};
}

const std::string kGroupKey(NEURON_RTD_FABRIC_GROUP_KEY_BYTES, 'k');

class CrossHostCommunicatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = hal::CreateBackend(
        hal::BackendOptions{.kind = "sim", .logical_nc_config = 0, .sim_preset = "dev"},
        DefaultOsSysCalls());
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = *std::move(backend);
    memory_ = std::make_unique<memory::MemoryManager>(*backend_);
    for (auto& router : routers_) {
      auto opened = FabricRouter::Open(Loopback());
      ASSERT_TRUE(opened.ok()) << opened.status();
      router = *std::move(opened);
    }
    for (uint32_t host = 0; host < 2; ++host) {
      auto topology = MakeHostTopology(
          host, {routers_[0]->address(), routers_[1]->address()}, {{0}, {1}}, 2, kGroupKey);
      ASSERT_TRUE(topology.ok()) << topology.status();
      communicators_[host] = std::make_shared<Communicator>(
          "c" + std::to_string(host), *topology, routers_[host].get(), absl::Seconds(20));
      ASSERT_TRUE(routers_[host]->Register(kGroupKey, communicators_[host]).ok());
    }
  }

  void JoinBoth() {
    std::thread other([&] {
      EXPECT_TRUE(communicators_[1]->Join(1, "rank 1", absl::Now() + absl::Seconds(20)).ok());
    });
    EXPECT_TRUE(communicators_[0]->Join(0, "rank 0", absl::Now() + absl::Seconds(20)).ok());
    other.join();
  }

  // Device memory holding `values`.
  RankBuffer Buffer(const std::vector<float>& values) {
    auto segment = memory_->Allocate(0, 0, std::max<size_t>(values.size() * 4, 4096));
    EXPECT_TRUE(segment.ok()) << segment.status();
    RankBuffer buffer{.segment = *segment, .device = backend_->devices()[0],
                      .address = (*segment)->range().address};
    EXPECT_TRUE(
        buffer.device->CopyHostToDevice(buffer.address, values.data(), values.size() * 4).ok());
    return buffer;
  }

  std::vector<float> Read(const RankBuffer& buffer, size_t count) {
    std::vector<float> values(count);
    EXPECT_TRUE(buffer.device->CopyDeviceToHost(values.data(), buffer.address, count * 4).ok());
    return values;
  }

  struct Posted {
    std::shared_ptr<GroupCompletion> completion;
    std::shared_ptr<absl::Notification> done = std::make_shared<absl::Notification>();
  };
  Posted Post(uint32_t host, neuron_rtd_collective_op op, RankBuffer send, RankBuffer recv) {
    Posted posted;
    auto completion = communicators_[host]->Post(
        host, {RankOp{.op = op, .send = std::move(send), .recv = std::move(recv)}},
        [done = posted.done] { done->Notify(); });
    EXPECT_TRUE(completion.ok()) << completion.status();
    posted.completion = *completion;
    return posted;
  }

  static neuron_rtd_collective_op AllReduce(uint64_t count, uint64_t sequence,
                                            uint32_t reduce = NEURON_RTD_REDUCE_SUM) {
    neuron_rtd_collective_op op{};
    op.kind = NEURON_RTD_COLLECTIVE_ALL_REDUCE;
    op.reduce_op = reduce;
    op.dtype = NEURON_RTD_DTYPE_FLOAT32;
    op.element_count = count;
    op.sequence = sequence;
    return op;
  }

  // A DATA header of host 1's step `phase` of an all-reduce of `count`
  // float32 elements, collective #0.
  static neuron_rtd_fabric_header AllReduceData(uint64_t count) {
    neuron_rtd_fabric_header header{};
    header.type = NEURON_RTD_FABRIC_DATA;
    header.phase = NEURON_RTD_FABRIC_PHASE_REDUCE;
    header.kind = NEURON_RTD_COLLECTIVE_ALL_REDUCE;
    header.dtype = NEURON_RTD_DTYPE_FLOAT32;
    header.reduce_op = NEURON_RTD_REDUCE_SUM;
    header.element_count = count;
    return header;
  }

  // A message as host 1 would send it to host 0, from an endpoint of its own.
  void SendAsHostOne(neuron_rtd_fabric_header header, const std::string& payload) {
    if (!attacker_) {
      auto opened = fabric::OpenLibfabricTransport(Loopback(), {});
      ASSERT_TRUE(opened.ok());
      attacker_ = *std::move(opened);
    }
    header.magic = NEURON_RTD_FABRIC_MAGIC;
    header.version = NEURON_RTD_FABRIC_VERSION;
    std::memcpy(header.group_key, kGroupKey.data(), kGroupKey.size());
    header.source_host = 1;
    header.bytes = payload.size();
    auto peer = attacker_->AddPeer(routers_[0]->address());
    ASSERT_TRUE(peer.ok());
    ASSERT_TRUE(attacker_
                    ->Send(*peer, {reinterpret_cast<const uint8_t*>(&header), sizeof(header)},
                           {reinterpret_cast<const uint8_t*>(payload.data()), payload.size()},
                           absl::InfiniteFuture())
                    .ok());
  }

  std::unique_ptr<hal::Backend> backend_;
  std::unique_ptr<memory::MemoryManager> memory_;
  std::unique_ptr<FabricRouter> routers_[2];
  std::shared_ptr<Communicator> communicators_[2];
  std::unique_ptr<fabric::Transport> attacker_;
};

TEST_F(CrossHostCommunicatorTest, AllReducesAcrossHostsInPlaceAndOutOfPlace) {
  JoinBoth();
  EXPECT_EQ(communicators_[0]->info().hosts, 2u);
  // More elements than one message carries, and not a multiple of the hosts.
  const size_t count = (3 << 20) / 4 + 3;
  std::vector<float> a(count), b(count);
  for (size_t i = 0; i < count; ++i) {
    a[i] = static_cast<float>(i % 1000);
    b[i] = 0.5f;
  }
  RankBuffer in_a = Buffer(a);
  RankBuffer in_b = Buffer(b);
  RankBuffer out_b = Buffer(std::vector<float>(count, -1));
  Posted first = Post(0, AllReduce(count, 0), in_a, in_a);
  Posted second = Post(1, AllReduce(count, 0), in_b, out_b);
  first.done->WaitForNotification();
  second.done->WaitForNotification();
  ASSERT_TRUE(first.completion->status().ok()) << first.completion->status();
  ASSERT_TRUE(second.completion->status().ok()) << second.completion->status();
  const std::vector<float> got_a = Read(in_a, count);
  const std::vector<float> got_b = Read(out_b, count);
  for (size_t i = 0; i < count; i += 997) {
    ASSERT_EQ(got_a[i], a[i] + 0.5f) << i;
    ASSERT_EQ(got_b[i], a[i] + 0.5f) << i;
  }
  EXPECT_EQ(got_a[count - 1], a[count - 1] + 0.5f);
  // AVG divides by the world once.
  Posted avg_a = Post(0, AllReduce(4, 1, NEURON_RTD_REDUCE_AVG), Buffer({2, 4, 6, 8}),
                      in_a);
  Posted avg_b = Post(1, AllReduce(4, 1, NEURON_RTD_REDUCE_AVG), Buffer({0, 0, 2, 2}),
                      out_b);
  avg_a.done->WaitForNotification();
  avg_b.done->WaitForNotification();
  ASSERT_TRUE(avg_a.completion->status().ok()) << avg_a.completion->status();
  EXPECT_EQ(Read(in_a, 4), (std::vector<float>{1, 2, 4, 5}));
  EXPECT_EQ(Read(out_b, 4), (std::vector<float>{1, 2, 4, 5}));
}

TEST_F(CrossHostCommunicatorTest, AHostThatIssuedAnotherCollectiveFailsBothNamingIt) {
  JoinBoth();
  RankBuffer mine = Buffer({1, 2});
  Posted posted = Post(0, AllReduce(2, 0), mine, mine);
  // "Host 1" says it issued an all-reduce of 3 elements.
  SendAsHostOne(AllReduceData(3), std::string(4, '\0'));
  posted.done->WaitForNotification();
  EXPECT_EQ(posted.completion->status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(posted.completion->status().message(), HasSubstr("host 1 issued ALL_REDUCE of 3"));
  // The communicator is aborted: later operations fail at once.
  EXPECT_FALSE(communicators_[0]->Post(0, {RankOp{.op = AllReduce(2, 1), .send = mine,
                                                  .recv = mine}},
                                       [] {})
                   .ok());
}

TEST_F(CrossHostCommunicatorTest, BytesOutsideTheSendersShareAreRefused) {
  JoinBoth();
  RankBuffer mine = Buffer({1, 2, 3, 4});
  Posted posted = Post(0, AllReduce(4, 0), mine, mine);
  neuron_rtd_fabric_header header = AllReduceData(4);
  // Host 0 reduces elements 0-1 (bytes 0-7); this lands at 1 << 40.
  header.offset = uint64_t{1} << 40;
  SendAsHostOne(header, std::string(8, '\0'));
  posted.done->WaitForNotification();
  EXPECT_THAT(posted.completion->status().message(), HasSubstr("outside its share"));
  EXPECT_EQ(Read(mine, 4), (std::vector<float>{1, 2, 3, 4}));
}

TEST_F(CrossHostCommunicatorTest, MalformedMessagesAreDroppedAndAnAbortFailsWhatWaits) {
  JoinBoth();
  const uint64_t dropped = routers_[0]->dropped();
  auto peer_of_host0 = [&] {
    if (!attacker_) attacker_ = *fabric::OpenLibfabricTransport(Loopback(), {});
    return *attacker_->AddPeer(routers_[0]->address());
  };
  const fabric::PeerId host0 = peer_of_host0();
  const std::string garbage = "not a header";
  ASSERT_TRUE(attacker_
                  ->Send(host0, {reinterpret_cast<const uint8_t*>(garbage.data()), garbage.size()},
                         {}, absl::InfiniteFuture())
                  .ok());
  neuron_rtd_fabric_header wrong_length{};
  wrong_length.magic = NEURON_RTD_FABRIC_MAGIC;
  wrong_length.version = NEURON_RTD_FABRIC_VERSION;
  wrong_length.bytes = 1000;  // but nothing follows
  ASSERT_TRUE(attacker_
                  ->Send(host0, {reinterpret_cast<const uint8_t*>(&wrong_length),
                                 sizeof(wrong_length)},
                         {}, absl::InfiniteFuture())
                  .ok());
  // A key no communicator has.
  neuron_rtd_fabric_header stranger = wrong_length;
  stranger.bytes = 0;
  stranger.type = NEURON_RTD_FABRIC_DATA;
  std::memset(stranger.group_key, 'x', sizeof(stranger.group_key));
  ASSERT_TRUE(attacker_
                  ->Send(host0, {reinterpret_cast<const uint8_t*>(&stranger), sizeof(stranger)},
                         {}, absl::InfiniteFuture())
                  .ok());
  RankBuffer mine = Buffer({1});
  Posted posted = Post(0, AllReduce(1, 0), mine, mine);
  neuron_rtd_fabric_header abort{};
  abort.type = NEURON_RTD_FABRIC_ABORT;
  SendAsHostOne(abort, "rank 1 (session 4, pid 99) left");
  posted.done->WaitForNotification();
  EXPECT_EQ(posted.completion->status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(posted.completion->status().message(),
              HasSubstr("host 1 failed: rank 1 (session 4, pid 99) left"));
  // Delivery is ordered per peer: the malformed three came first.
  EXPECT_EQ(routers_[0]->dropped(), dropped + 3);
}

TEST_F(CrossHostCommunicatorTest, HostsGivenDifferentRanksDoNotJoin) {
  auto other = MakeHostTopology(1, {routers_[0]->address(), routers_[1]->address()},
                                {{1}, {0}}, 2, std::string(NEURON_RTD_FABRIC_GROUP_KEY_BYTES, 'z'));
  ASSERT_TRUE(other.ok());
  auto mismatched =
      MakeHostTopology(0, {routers_[0]->address(), routers_[1]->address()}, {{0}, {1}}, 2,
                       std::string(NEURON_RTD_FABRIC_GROUP_KEY_BYTES, 'z'));
  auto left = std::make_shared<Communicator>("left", *mismatched, routers_[0].get(),
                                             absl::Seconds(20));
  auto right =
      std::make_shared<Communicator>("right", *other, routers_[1].get(), absl::Seconds(20));
  ASSERT_TRUE(routers_[0]->Register(mismatched->group_key, left).ok());
  ASSERT_TRUE(routers_[1]->Register(other->group_key, right).ok());
  absl::Status right_joined;
  std::thread joiner(
      [&] { right_joined = right->Join(0, "rank 0", absl::Now() + absl::Seconds(20)); });
  const absl::Status left_joined = left->Join(0, "rank 0", absl::Now() + absl::Seconds(20));
  joiner.join();
  // Whichever side finds out first tells the other (ABORTED, with its
  // reason).
  EXPECT_FALSE(left_joined.ok());
  EXPECT_THAT(left_joined.message(), HasSubstr("other hosts or ranks"));
  EXPECT_FALSE(right_joined.ok());
  EXPECT_THAT(right_joined.message(), HasSubstr("other hosts or ranks"));
}

TEST_F(CrossHostCommunicatorTest, AHostThatNeverJoinsIsNamedAtTheDeadline) {
  const absl::Status joined = communicators_[0]->Join(0, "rank 0", absl::Now() + absl::Seconds(1));
  EXPECT_EQ(joined.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(joined.message(), HasSubstr("host(s) 1 (rank(s) 1) did not join in time"));
}

}  // namespace
}  // namespace neuron::rtd::collectives

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

  // A DATA header of host 1's exchange of a (small) all-reduce of `count`
  // float32 elements by recursive doubling, collective #0.
  static neuron_rtd_fabric_header AllReduceData(uint64_t count) {
    neuron_rtd_fabric_header header{};
    header.type = NEURON_RTD_FABRIC_DATA;
    header.phase = NEURON_RTD_FABRIC_PHASE_REDUCE;
    header.step = 1;
    header.algorithm = NEURON_RTD_FABRIC_ALGORITHM_RECURSIVE_DOUBLING;
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

  // `count` hosts of one rank each, joined, with endpoints of their own.
  struct Hosts {
    std::vector<std::unique_ptr<FabricRouter>> routers;
    std::vector<std::shared_ptr<Communicator>> communicators;
  };
  Hosts JoinHosts(uint32_t count, HostAlgorithmOptions options,
                  absl::Duration timeout = absl::Seconds(30)) {
    Hosts hosts;
    std::vector<std::string> addresses;
    std::vector<std::vector<uint32_t>> ranks;
    for (uint32_t host = 0; host < count; ++host) {
      auto opened = FabricRouter::Open(Loopback());
      EXPECT_TRUE(opened.ok()) << opened.status();
      addresses.push_back((*opened)->address());
      ranks.push_back({host});
      hosts.routers.push_back(*std::move(opened));
    }
    const std::string key(NEURON_RTD_FABRIC_GROUP_KEY_BYTES, 'm');
    for (uint32_t host = 0; host < count; ++host) {
      auto topology = MakeHostTopology(host, addresses, ranks, count, key);
      EXPECT_TRUE(topology.ok()) << topology.status();
      hosts.communicators.push_back(std::make_shared<Communicator>(
          "m" + std::to_string(host), *topology, hosts.routers[host].get(), timeout, nullptr,
          options));
      EXPECT_TRUE(hosts.routers[host]->Register(key, hosts.communicators[host]).ok());
    }
    std::vector<std::thread> joiners;
    for (uint32_t host = 0; host < count; ++host) {
      joiners.emplace_back([&hosts, host] {
        EXPECT_TRUE(hosts.communicators[host]
                        ->Join(host, "rank " + std::to_string(host),
                               absl::Now() + absl::Seconds(30))
                        .ok());
      });
    }
    for (std::thread& joiner : joiners) joiner.join();
    return hosts;
  }

  // Each host's rank all-reduces `inputs[host]` (host 0 in place, the
  // others out of place); returns what each rank got.
  std::vector<std::vector<float>> AllReduceOn(Hosts& hosts,
                                              const std::vector<std::vector<float>>& inputs,
                                              uint64_t sequence, uint32_t reduce) {
    const size_t count = inputs[0].size();
    std::vector<RankBuffer> outputs;
    std::vector<Posted> posted;
    for (uint32_t host = 0; host < inputs.size(); ++host) {
      RankBuffer input = Buffer(inputs[host]);
      outputs.push_back(host == 0 ? input : Buffer(std::vector<float>(count, -1)));
      Posted post;
      auto completion = hosts.communicators[host]->Post(
          host, {RankOp{.op = AllReduce(count, sequence, reduce), .send = input,
                        .recv = outputs.back()}},
          [done = post.done] { done->Notify(); });
      EXPECT_TRUE(completion.ok()) << completion.status();
      post.completion = *completion;
      posted.push_back(std::move(post));
    }
    std::vector<std::vector<float>> results;
    for (uint32_t host = 0; host < inputs.size(); ++host) {
      posted[host].done->WaitForNotification();
      EXPECT_TRUE(posted[host].completion->status().ok()) << posted[host].completion->status();
      results.push_back(Read(outputs[host], count));
    }
    return results;
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
  // The exchange carries bytes 0-15; this lands at 1 << 40.
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

// Integers small enough that every order of summing them is exact.
std::vector<std::vector<float>> HostInputs(uint32_t hosts, size_t count) {
  std::vector<std::vector<float>> inputs(hosts, std::vector<float>(count));
  for (uint32_t host = 0; host < hosts; ++host) {
    for (size_t i = 0; i < count; ++i) {
      inputs[host][i] = static_cast<float>((i * 7 + host * 3) % 13) - 6;
    }
  }
  return inputs;
}

TEST_F(CrossHostCommunicatorTest, RingAndRecursiveDoublingSumOverTwoToFiveHosts) {
  const HostAlgorithmOptions ring{.recursive_doubling_max_bytes = 0};
  const HostAlgorithmOptions doubling{.recursive_doubling_max_bytes = uint64_t{1} << 40};
  for (uint32_t count_of_hosts : {2u, 3u, 4u, 5u}) {
    for (const HostAlgorithmOptions& options : {ring, doubling}) {
      SCOPED_TRACE(::testing::Message() << count_of_hosts << " hosts, recursive doubling up to "
                                        << options.recursive_doubling_max_bytes << " bytes");
      Hosts hosts = JoinHosts(count_of_hosts, options);
      uint64_t sequence = 0;
      // Fewer elements than hosts (empty segments), a few, and (by the
      // ring, 3 hosts) segments of several pieces, so that pieces are
      // forwarded before their segment is complete.
      std::vector<size_t> counts = {1, 7, 1000};
      if (count_of_hosts == 3 && &options == &ring) counts.push_back((5 << 20) / 4 + 5);
      for (size_t count : counts) {
        SCOPED_TRACE(count);
        const auto inputs = HostInputs(count_of_hosts, count);
        const auto results =
            AllReduceOn(hosts, inputs, sequence++, NEURON_RTD_REDUCE_SUM);
        for (size_t i = 0; i < count; ++i) {
          float sum = 0;
          for (const auto& input : inputs) sum += input[i];
          ASSERT_EQ(results[0][i], sum) << i;
        }
        for (uint32_t host = 1; host < count_of_hosts; ++host) {
          ASSERT_EQ(results[host], results[0]) << "host " << host;
        }
      }
      // The finish (AVG divides by the world) runs once per element.
      const auto averaged = AllReduceOn(
          hosts, std::vector<std::vector<float>>(count_of_hosts, std::vector<float>(5, 2.0f)),
          sequence++, NEURON_RTD_REDUCE_AVG);
      for (const auto& result : averaged) EXPECT_EQ(result, std::vector<float>(5, 2.0f));
    }
  }
}

TEST_F(CrossHostCommunicatorTest, DaemonsWithDifferentAlgorithmLimitsDoNotJoin) {
  auto topology = [&](uint32_t host) {
    return *MakeHostTopology(host, {routers_[0]->address(), routers_[1]->address()}, {{0}, {1}},
                             2, std::string(NEURON_RTD_FABRIC_GROUP_KEY_BYTES, 'd'));
  };
  auto left = std::make_shared<Communicator>("left", topology(0), routers_[0].get(),
                                             absl::Seconds(20), nullptr,
                                             HostAlgorithmOptions{.recursive_doubling_max_bytes = 0});
  auto right = std::make_shared<Communicator>("right", topology(1), routers_[1].get(),
                                              absl::Seconds(20));
  ASSERT_TRUE(routers_[0]->Register(topology(0).group_key, left).ok());
  ASSERT_TRUE(routers_[1]->Register(topology(1).group_key, right).ok());
  absl::Status right_joined;
  std::thread joiner(
      [&] { right_joined = right->Join(1, "rank 1", absl::Now() + absl::Seconds(20)); });
  const absl::Status left_joined = left->Join(0, "rank 0", absl::Now() + absl::Seconds(20));
  joiner.join();
  EXPECT_THAT(left_joined.message(), HasSubstr("recursive_doubling_max_bytes"));
  EXPECT_THAT(right_joined.message(), HasSubstr("recursive_doubling_max_bytes"));
}

TEST_F(CrossHostCommunicatorTest, AMessageOfAnotherAlgorithmFailsTheCollective) {
  JoinBoth();
  // 128 KiB: past the default limit, so the ring; "host 1" says doubling.
  const size_t count = 32 << 10;
  RankBuffer mine = Buffer(std::vector<float>(count, 1));
  Posted posted = Post(0, AllReduce(count, 0), mine, mine);
  neuron_rtd_fabric_header header = AllReduceData(count);
  header.step = 0;
  SendAsHostOne(header, std::string(16, '\0'));
  posted.done->WaitForNotification();
  EXPECT_THAT(posted.completion->status().message(),
              HasSubstr("host 1 runs it by recursive doubling, this host by ring"));
}

TEST_F(CrossHostCommunicatorTest, RingBytesSentTwiceAreRefused) {
  JoinBoth();
  // Host 0 receives segment 1 (the second half, 1.5 MiB: two pieces) in
  // the reduce-scatter. The first piece, then part of it again: fewer
  // bytes than the segment, but more than the piece.
  const size_t count = (3 << 20) / 4;
  RankBuffer mine = Buffer(std::vector<float>(count, 1));
  Posted posted = Post(0, AllReduce(count, 0), mine, mine);
  neuron_rtd_fabric_header header = AllReduceData(count);
  header.step = 0;
  header.algorithm = NEURON_RTD_FABRIC_ALGORITHM_RING;
  header.offset = count * 2;
  SendAsHostOne(header, std::string((1 << 20) - sizeof(header), '\0'));
  SendAsHostOne(header, std::string(64, '\0'));
  posted.done->WaitForNotification();
  EXPECT_THAT(posted.completion->status().message(), HasSubstr("arrived twice"));
}

TEST_F(CrossHostCommunicatorTest, AHostThatNeverIssuesTheCollectiveIsNamedAtTheDeadline) {
  for (uint64_t count : {4ull, 1ull << 20}) {  // recursive doubling, the ring
    Hosts hosts = JoinHosts(2, {}, absl::Milliseconds(500));
    RankBuffer mine = Buffer(std::vector<float>(count, 1));
    Posted posted;
    auto completion = hosts.communicators[0]->Post(
        0, {RankOp{.op = AllReduce(count, 0), .send = mine, .recv = mine}},
        [done = posted.done] { done->Notify(); });
    ASSERT_TRUE(completion.ok());
    posted.done->WaitForNotification();
    EXPECT_EQ((*completion)->status().code(), absl::StatusCode::kDeadlineExceeded) << count;
    EXPECT_THAT((*completion)->status().message(), HasSubstr("for host 1 (rank(s) 1)"));
  }
}

TEST_F(CrossHostCommunicatorTest, AHostThatNeverJoinsIsNamedAtTheDeadline) {
  const absl::Status joined = communicators_[0]->Join(0, "rank 0", absl::Now() + absl::Seconds(1));
  EXPECT_EQ(joined.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(joined.message(), HasSubstr("host(s) 1 (rank(s) 1) did not join in time"));
}

}  // namespace
}  // namespace neuron::rtd::collectives

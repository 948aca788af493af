// The libfabric transport over tcp;ofi_rxm on the loopback interface: two
// endpoints of one process play two daemons.
#include "daemon/fabric/libfabric_transport.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neuron::rtd::fabric {
namespace {

FabricOptions Loopback() {
  FabricOptions options;
  options.provider = "tcp;ofi_rxm";
  options.interface = "lo";
  options.send_buffers = 4;
  options.receive_buffers = 8;
  return options;
}

// What a transport's handlers saw.
struct Inbox {
  absl::Mutex mutex;
  std::vector<std::string> messages ABSL_GUARDED_BY(mutex);
  std::vector<std::string> failures ABSL_GUARDED_BY(mutex);

  TransportHandlers Handlers() {
    return {.on_message =
                [this](std::span<const uint8_t> message) {
                  absl::MutexLock lock(&mutex);
                  messages.emplace_back(message.begin(), message.end());
                },
            .on_send_failed =
                [this](PeerId, const absl::Status& why) {
                  absl::MutexLock lock(&mutex);
                  failures.emplace_back(why.message());
                }};
  }
  void AwaitMessages(size_t count) {
    absl::MutexLock lock(&mutex);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex) { return messages.size() >= count; };
    mutex.Await(absl::Condition(&enough));
  }
};

std::span<const uint8_t> Bytes(const std::string& text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

TEST(LibfabricTransportTest, DeliversWholeMessagesBetweenEndpoints) {
  Inbox a_inbox, b_inbox;
  auto a = OpenLibfabricTransport(Loopback(), a_inbox.Handlers());
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = OpenLibfabricTransport(Loopback(), b_inbox.Handlers());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT((*a)->description(), testing::HasSubstr("tcp;ofi_rxm"));
  auto to_b = (*a)->AddPeer((*b)->address());
  ASSERT_TRUE(to_b.ok()) << to_b.status();
  EXPECT_EQ(*(*a)->AddPeer((*b)->address()), *to_b);

  // More messages than send or receive buffers, the largest size included.
  const std::string big(kFabricMessageBytes - 8, 'x');
  const std::string header("head0001");
  constexpr int kMessages = 40;
  for (int i = 0; i < kMessages; ++i) {
    const std::string payload = i == 7 ? big : std::string("payload ") + std::to_string(i);
    ASSERT_TRUE((*a)->Send(*to_b, Bytes(header), Bytes(payload), absl::InfiniteFuture()).ok());
  }
  b_inbox.AwaitMessages(kMessages);
  absl::MutexLock lock(&b_inbox.mutex);
  int big_seen = 0;
  for (const std::string& message : b_inbox.messages) {
    ASSERT_EQ(message.substr(0, 8), header);
    if (message.size() == kFabricMessageBytes) ++big_seen;
  }
  EXPECT_EQ(big_seen, 1);
}

TEST(LibfabricTransportTest, RefusesOversizedMessagesAndBadAddresses) {
  Inbox inbox;
  auto a = OpenLibfabricTransport(Loopback(), inbox.Handlers());
  ASSERT_TRUE(a.ok()) << a.status();
  auto self = (*a)->AddPeer((*a)->address());
  ASSERT_TRUE(self.ok());
  const std::string too_big(kFabricMessageBytes + 1, 'x');
  EXPECT_EQ((*a)->Send(*self, {}, Bytes(too_big), absl::InfiniteFuture()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*a)->AddPeer("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*a)->AddPeer(std::string(300, 'a')).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// tcp;ofi_rxm keeps reconnecting to a peer that is gone: a send to it fails
// at its deadline (the communicators' operation timeout), and the
// transport still closes.
TEST(LibfabricTransportTest, ASendToAGonePeerFailsAtItsDeadline) {
  Inbox a_inbox, b_inbox;
  auto a = OpenLibfabricTransport(Loopback(), a_inbox.Handlers());
  ASSERT_TRUE(a.ok()) << a.status();
  std::string gone_address;
  {
    auto b = OpenLibfabricTransport(Loopback(), b_inbox.Handlers());
    ASSERT_TRUE(b.ok()) << b.status();
    gone_address = (*b)->address();
  }
  auto to_gone = (*a)->AddPeer(gone_address);
  ASSERT_TRUE(to_gone.ok());
  EXPECT_EQ((*a)->Send(*to_gone, Bytes("hello"), {}, absl::Now() + absl::Milliseconds(200)).code(),
            absl::StatusCode::kDeadlineExceeded);
  a->reset();
}

TEST(LibfabricTransportTest, NamesAMissingProviderOrLibrary) {
  FabricOptions options = Loopback();
  options.provider = "no-such-provider";
  auto missing = OpenLibfabricTransport(options, {});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(missing.status().message(), testing::HasSubstr("no-such-provider"));
  options = Loopback();
  options.library = "libno-such-fabric.so.1";
  auto no_library = OpenLibfabricTransport(options, {});
  EXPECT_EQ(no_library.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(no_library.status().message(), testing::HasSubstr("libno-such-fabric.so.1"));
}

}  // namespace
}  // namespace neuron::rtd::fabric

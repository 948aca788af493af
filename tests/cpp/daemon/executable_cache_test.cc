// The executable cache's budget, per-user quota, holds and eviction order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "daemon/common/os_sys_calls.h"
#include "daemon/exec/executable_cache.h"
#include "daemon/hal/backend_factory.h"
#include "neuron/rtd/content_hash.h"
#include "neuron/rtd/v1/executable.pb.h"

namespace neuron::rtd::exec {
namespace {

using ::testing::HasSubstr;

constexpr uid_t kAlice = 1001;
constexpr uid_t kBob = 1002;

hal::Backend& SimBackend() {
  static hal::Backend* backend = [] {
    auto created = hal::CreateBackend(
        hal::BackendOptions{.kind = "sim", .logical_nc_config = 0, .sim_preset = "dev"},
        DefaultOsSysCalls());
    return created.ok() ? created->release() : nullptr;
  }();
  return *backend;
}

// A distinct, valid executable per `size`: aten::neg of `size` floats.
std::string NegBody(int64_t size) {
  v1::ExecutableBody body;
  v1::EagerOp* op = body.mutable_eager_op();
  op->set_name("aten::neg");
  for (uint32_t address : {0u, 1u}) {
    v1::TensorSpec* spec = address == 0 ? op->add_arguments()->mutable_tensor() : op->add_outputs();
    spec->set_dtype(v1::SCALAR_TYPE_FLOAT32);
    spec->add_sizes(size);
    spec->add_strides(1);
    spec->set_address_index(address);
  }
  return body.SerializeAsString();
}

uint64_t Charged(int64_t size) { return NegBody(size).size() + kExecutableOverheadBytes; }

class ExecutableCacheTest : public ::testing::Test {
 protected:
  // A budget of `entries` executables in all and `per_user` per user.
  void MakeCache(uint64_t entries, uint64_t per_user) {
    cache_ = std::make_unique<ExecutableCache>(
        SimBackend(), CacheLimits{.max_bytes = entries * Charged(100),
                                  .max_bytes_per_user = per_user * Charged(100)});
  }

  absl::StatusOr<LoadResult> Load(int64_t size, uid_t uid) {
    const std::string body = NegBody(size);
    return cache_->Load(ContentHash(body), "neg", body, ExecutableBodyKind::kEagerOp, uid);
  }

  bool Cached(int64_t size) {
    auto hold = cache_->LookupAndHold(ContentHash(NegBody(size)), kAlice);
    return hold.ok() && hold->has_value();
  }

  std::unique_ptr<ExecutableCache> cache_;
};

TEST_F(ExecutableCacheTest, AReleasedExecutableStaysCachedUntilItsRoomIsNeeded) {
  MakeCache(/*entries=*/4, /*per_user=*/4);
  {
    absl::StatusOr<LoadResult> loaded = Load(100, kAlice);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_FALSE(loaded->cache_hit);
    EXPECT_EQ(cache_->stats().held_entries, 1u);
    EXPECT_EQ(cache_->held_bytes_of_user(kAlice), Charged(100));
  }
  const CacheStats stats = cache_->stats();
  EXPECT_EQ(stats.entries, 1u);
  EXPECT_EQ(stats.held_entries, 0u);
  EXPECT_EQ(stats.held_bytes, 0u);
  EXPECT_EQ(stats.memory_bytes, Charged(100));
  EXPECT_EQ(cache_->held_bytes_of_user(kAlice), 0u);
  absl::StatusOr<LoadResult> again = Load(100, kBob);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->cache_hit);
}

TEST_F(ExecutableCacheTest, TheLeastRecentlyReleasedGoesFirst) {
  MakeCache(/*entries=*/3, /*per_user=*/8);
  std::vector<LoadResult> held;
  for (int64_t size : {100, 101, 102}) held.push_back(*Load(size, kAlice));
  // Released in the order 101, 100, 102.
  held[1] = LoadResult();
  held[0] = LoadResult();
  held[2] = LoadResult();
  absl::StatusOr<LoadResult> fourth = Load(103, kAlice);
  ASSERT_TRUE(fourth.ok()) << fourth.status();
  EXPECT_EQ(cache_->stats().evictions, 1u);
  fourth = LoadResult();
  EXPECT_FALSE(Cached(101));
  EXPECT_TRUE(Cached(100));
  EXPECT_TRUE(Cached(102));
}

TEST_F(ExecutableCacheTest, HeldExecutablesAreNeverEvicted) {
  MakeCache(/*entries=*/2, /*per_user=*/8);
  std::vector<LoadResult> held;
  for (int64_t size : {100, 101}) held.push_back(*Load(size, kAlice));
  absl::StatusOr<LoadResult> third = Load(102, kBob);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(third.status().message(), HasSubstr("max_cache_bytes"));
  EXPECT_EQ(cache_->stats().evictions, 0u);
  // A hold of something cached needs no room.
  absl::StatusOr<LoadResult> shared = Load(100, kBob);
  EXPECT_TRUE(shared.ok()) << shared.status();
}

TEST_F(ExecutableCacheTest, EachUserHoldsAtMostItsQuota) {
  MakeCache(/*entries=*/8, /*per_user=*/2);
  std::vector<LoadResult> alice;
  for (int64_t size : {100, 101}) alice.push_back(*Load(size, kAlice));
  absl::StatusOr<LoadResult> third = Load(102, kAlice);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(third.status().message(), HasSubstr("uid 1001"));
  EXPECT_THAT(third.status().message(), HasSubstr("max_bytes_per_user"));
  // Holding one of its own again costs nothing.
  EXPECT_TRUE(Load(100, kAlice).ok());
  // Another user is not affected, and may not push Alice past her quota by
  // sharing: Bob's executable is charged to Alice when she holds it too.
  absl::StatusOr<LoadResult> bob = Load(102, kBob);
  ASSERT_TRUE(bob.ok()) << bob.status();
  auto shared = cache_->LookupAndHold(ContentHash(NegBody(102)), kAlice);
  EXPECT_EQ(shared.status().code(), absl::StatusCode::kResourceExhausted);
  alice.pop_back();
  shared = cache_->LookupAndHold(ContentHash(NegBody(102)), kAlice);
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_TRUE(shared->has_value());
  EXPECT_EQ(cache_->held_bytes_of_user(kAlice), 2 * Charged(100));
  EXPECT_EQ(cache_->held_bytes_of_user(kBob), Charged(100));
}

TEST_F(ExecutableCacheTest, EvictUnheldKeepsWhatSessionsHold) {
  MakeCache(/*entries=*/8, /*per_user=*/8);
  LoadResult kept = *Load(100, kAlice);
  for (int64_t size : {101, 102, 103}) (void)Load(size, kBob);
  EXPECT_EQ(cache_->EvictUnheld(), 3u);
  const CacheStats stats = cache_->stats();
  EXPECT_EQ(stats.entries, 1u);
  EXPECT_EQ(stats.held_entries, 1u);
  EXPECT_EQ(stats.memory_bytes, Charged(100));
}

TEST_F(ExecutableCacheTest, ConcurrentHoldsAndReleasesBalance) {
  MakeCache(/*entries=*/16, /*per_user=*/16);
  std::vector<std::thread> threads;
  for (uid_t uid : {kAlice, kBob}) {
    threads.emplace_back([this, uid] {
      for (int round = 0; round < 200; ++round) {
        std::vector<LoadResult> held;
        for (int64_t size = 100; size < 108; ++size) {
          absl::StatusOr<LoadResult> loaded = Load(size + (round % 3) * 8, uid);
          if (loaded.ok()) held.push_back(*std::move(loaded));
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const CacheStats stats = cache_->stats();
  EXPECT_EQ(stats.held_entries, 0u);
  EXPECT_EQ(stats.held_bytes, 0u);
  EXPECT_LE(stats.memory_bytes, stats.limits.max_bytes);
  EXPECT_EQ(cache_->held_bytes_of_user(kAlice), 0u);
  EXPECT_EQ(cache_->held_bytes_of_user(kBob), 0u);
}

}  // namespace
}  // namespace neuron::rtd::exec

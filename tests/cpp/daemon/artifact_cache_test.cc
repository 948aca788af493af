#include "daemon/compiler/artifact_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "daemon/common/os_sys_calls.h"
#include "daemon/compiler/cache_miss.h"
#include "testing/temp_dir.h"

namespace neuron::rtd::compiler {
namespace {

namespace fs = std::filesystem;
using ::testing::AnyOf;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAre;

std::string Read(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream content;
  content << file.rdbuf();
  return content.str();
}

std::vector<std::string> Files(const std::string& directory) {
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory)) {
    if (entry.is_regular_file()) names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  return names;
}

const CompileKey kKey{.graph = "g1", .torch_version = "2.13.0", .compiler_flags = "f", .cpu = "c"};

class ArtifactCacheTest : public ::testing::Test {
 protected:
  std::unique_ptr<ArtifactCache> Open(absl::Duration orphan_age = absl::Minutes(10)) {
    auto cache = ArtifactCache::Open(
        {.directory = dir_.Join("cache"), .orphan_age = orphan_age}, DefaultOsSysCalls());
    EXPECT_TRUE(cache.ok()) << cache.status();
    return cache.ok() ? *std::move(cache) : nullptr;
  }
  // A compiler output to store: a file outside the cache.
  std::string Output(const std::string& content) {
    return dir_.WriteFile("out" + std::to_string(outputs_++) + ".pt2", content);
  }

  testing::TempDir dir_;
  int outputs_ = 0;
};

TEST_F(ArtifactCacheTest, AStoredPackageIsFoundWithTheKeysParts) {
  auto cache = Open();
  absl::StatusOr<std::string> stored = cache->Store(kKey, Output("code"), "graph_0", 1.5);
  ASSERT_TRUE(stored.ok()) << stored.status();
  std::optional<std::string> found = cache->Find(kKey.Digest());
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(*found, *stored);
  EXPECT_EQ(Read(*found), "code");
  const std::vector<StoredArtifact> listed = cache->List();
  ASSERT_THAT(listed, SizeIs(1));
  EXPECT_EQ(listed[0].key, kKey.Digest());
  EXPECT_EQ(listed[0].parts.graph, "g1");
  EXPECT_EQ(listed[0].parts.torch_version, "2.13.0");
  EXPECT_EQ(listed[0].parts.compiler_flags, "f");
  EXPECT_EQ(listed[0].parts.cpu, "c");
  EXPECT_EQ(listed[0].graph_name, "graph_0");
  EXPECT_EQ(listed[0].bytes, 4u);
  EXPECT_FALSE(cache->Find(CompileKey{.graph = "g2"}.Digest()).has_value());
}

TEST_F(ArtifactCacheTest, EachPartOfTheKeyMakesAnotherKey) {
  std::set<std::string> digests = {kKey.Digest()};
  CompileKey graph = kKey, torch = kKey, flags = kKey, cpu = kKey;
  graph.graph = "g2";
  torch.torch_version = "2.14.0";
  flags.compiler_flags = "f2";
  cpu.cpu = "c2";
  for (const CompileKey& key : {graph, torch, flags, cpu}) digests.insert(key.Digest());
  EXPECT_THAT(digests, SizeIs(5));
}

// Two daemons sharing the directory compile the same graph; compilers are
// not deterministic, so the packages differ. The last record wins, names a
// whole package, and the other package is removed once it is old.
TEST_F(ArtifactCacheTest, TwoWritersOfOneKeyLeaveOneWholePackage) {
  auto first = Open(absl::ZeroDuration());
  auto second = Open(absl::ZeroDuration());
  ASSERT_TRUE(first->Store(kKey, Output("first"), "g", 1).ok());
  ASSERT_TRUE(second->Store(kKey, Output("second"), "g", 1).ok());
  std::optional<std::string> found = first->Find(kKey.Digest());
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(Read(*found), "second");
  // The first package is no record's: gone with the second store's sweep.
  EXPECT_THAT(Files(dir_.Join("cache")),
              UnorderedElementsAre(kKey.Digest() + ".json", fs::path(*found).filename().string()));
}

TEST_F(ArtifactCacheTest, APackageNoRecordNamesStaysWhileYoung) {
  auto cache = Open();  // orphans older than 10 minutes go
  ASSERT_TRUE(cache->Store(kKey, Output("first"), "g", 1).ok());
  ASSERT_TRUE(cache->Store(kKey, Output("second"), "g", 1).ok());
  // Another writer may be about to publish a record for it.
  EXPECT_THAT(Files(dir_.Join("cache")), SizeIs(3));
  EXPECT_EQ(cache->Clear(), 1u);
  EXPECT_THAT(Files(dir_.Join("cache")), IsEmpty());
}

TEST_F(ArtifactCacheTest, ADamagedPackageIsRemovedAndMisses) {
  auto cache = Open();
  absl::StatusOr<std::string> stored = cache->Store(kKey, Output("code"), "g", 1);
  ASSERT_TRUE(stored.ok());
  std::ofstream(*stored, std::ios::trunc) << "tampered";
  EXPECT_FALSE(cache->Find(kKey.Digest()).has_value());
  EXPECT_THAT(Files(dir_.Join("cache")), IsEmpty());
}

// A record is a file another process wrote: it may name anything, or hold
// fields of the wrong types.
TEST_F(ArtifactCacheTest, ARecordNamingAFileElsewhereIsNotRead) {
  auto cache = Open();
  const std::string outside = dir_.WriteFile("secret.pt2", "x");
  const std::string record = dir_.Join("cache/" + kKey.Digest() + ".json");
  for (const std::string& text : std::vector<std::string>{
           R"({"package": "../secret.pt2", "hash": "h"})",
        R"({"package": ")" + kKey.Digest() + R"(.0123456789abcdef.pt2/../../secret.pt2"})",
        R"({"package": 7, "hash": [], "bytes": "many", "key": 3})",
        R"({"bytes": 1e30, "compile_seconds": "long", "key": {"graph": 5}})",
        R"({"bytes": -1, "graph": null})", std::string("not json"),
        std::string("[1, 2]")}) {
    std::ofstream(record, std::ios::trunc) << text;
    EXPECT_FALSE(cache->Find(kKey.Digest()).has_value()) << text;
    EXPECT_FALSE(fs::exists(record)) << text;
    std::ofstream(record, std::ios::trunc) << text;
    EXPECT_THAT(cache->List(), SizeIs(AnyOf(Eq(0u), Eq(1u)))) << text;
    fs::remove(record);
  }
  EXPECT_TRUE(fs::exists(outside));
}

TEST_F(ArtifactCacheTest, WhatACrashedWriterLeftIsRemovedOnceOld) {
  auto cache = Open(absl::ZeroDuration());
  dir_.WriteFile("cache/.tmp." + kKey.Digest() + ".pt2.otherhost-12.0", "half");
  ASSERT_TRUE(cache->Store(CompileKey{.graph = "other"}, Output("code"), "g", 1).ok());
  EXPECT_THAT(Files(dir_.Join("cache")), SizeIs(2));  // the new record and its package
}

// Daemons on one directory store and find one key at once: every package a
// reader is handed is whole and is one that was stored, and no writer's
// package is taken away before its record is published.
TEST_F(ArtifactCacheTest, ConcurrentWritersAndReadersSeeWholePackages) {
  auto reader = Open();
  std::vector<std::unique_ptr<ArtifactCache>> writers;
  for (int i = 0; i < 2; ++i) writers.push_back(Open());
  constexpr int kStores = 40;
  std::vector<std::vector<std::string>> outputs(writers.size());
  std::set<std::string> contents;
  for (size_t w = 0; w < writers.size(); ++w) {
    for (int i = 0; i < kStores; ++i) {
      const std::string content = std::string(4096, static_cast<char>('a' + w)) +
                                  std::to_string(i);
      contents.insert(content);
      outputs[w].push_back(Output(content));
    }
  }
  std::vector<std::thread> threads;
  for (size_t w = 0; w < writers.size(); ++w) {
    threads.emplace_back([&, w] {
      for (const std::string& output : outputs[w]) {
        EXPECT_TRUE(writers[w]->Store(kKey, output, "g", 1).ok());
      }
    });
  }
  int hits = 0;
  std::atomic<bool> done{false};
  std::thread read([&] {
    while (!done.load()) {
      if (std::optional<std::string> found = reader->Find(kKey.Digest())) {
        const std::string content = Read(*found);
        ++hits;
        EXPECT_TRUE(contents.contains(content)) << content.size() << " bytes";
      }
    }
  });
  for (std::thread& thread : threads) thread.join();
  done.store(true);
  read.join();
  EXPECT_GT(hits, 0);
  std::optional<std::string> last = reader->Find(kKey.Digest());
  ASSERT_TRUE(last.has_value());
  EXPECT_TRUE(contents.contains(Read(*last)));
  // One record, and every package (those no record names are young).
  EXPECT_THAT(Files(dir_.Join("cache")), SizeIs(1 + contents.size()));
  EXPECT_EQ(reader->Clear(), 1u);
  EXPECT_THAT(Files(dir_.Join("cache")), IsEmpty());
}

StoredArtifact Stored(const CompileKey& parts, const std::string& name) {
  return StoredArtifact{.key = parts.Digest(), .parts = parts, .graph_name = name, .bytes = 1};
}

TEST(ExplainCacheLookupTest, AStoredKeyIsOnDisk) {
  const std::vector<StoredArtifact> stored = {Stored(kKey, "g")};
  EXPECT_THAT(ExplainCacheLookup(kKey, "g", stored), HasSubstr("on disk: a package with"));
}

TEST(ExplainCacheLookupTest, AMissNamesThePartsThatDifferFromTheSameGraphsPackages) {
  CompileKey torch = kKey, cpu = kKey, both = kKey;
  torch.torch_version = "2.14.0";
  cpu.cpu = "other-cpu";
  both.torch_version = "2.15.0";
  both.compiler_flags = "f-old";
  const std::vector<StoredArtifact> stored = {Stored(torch, "g"), Stored(cpu, "g"),
                                              Stored(both, "g")};
  const std::string why = ExplainCacheLookup(kKey, "g", stored);
  EXPECT_THAT(why, HasSubstr("not on disk"));
  EXPECT_THAT(why, HasSubstr("torch 2.14.0 (here 2.13.0)"));
  EXPECT_THAT(why, HasSubstr("another CPU"));
  EXPECT_THAT(why, HasSubstr("torch 2.15.0 (here 2.13.0), the compiler's flags \"f-old\""));
}

TEST(ExplainCacheLookupTest, AMissOfAGraphNeverStoredSaysSoAndCountsNamesakes) {
  CompileKey other_graph = kKey;
  other_graph.graph = "g-other";
  const std::vector<StoredArtifact> stored = {Stored(other_graph, "forward_0"),
                                              Stored(CompileKey{.graph = "x"}, "backward_0")};
  const std::string why = ExplainCacheLookup(kKey, "forward_0", stored);
  EXPECT_THAT(why, HasSubstr("no package of this graph"));
  EXPECT_THAT(why, HasSubstr("1 package(s) named forward_0 are of another graph"));
  EXPECT_THAT(ExplainCacheLookup(kKey, "g", {}), Not(HasSubstr("named")));
}

}  // namespace
}  // namespace neuron::rtd::compiler

// Tier 1 of graph executables: a graph launched often enough is compiled by
// the daemon's supervised compiler worker while it keeps running
// interpreted, then runs compiled; the package outlives the daemon; a
// worker that cannot start or takes too long leaves graphs interpreted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "neuron/rtd/graph_plan.h"
#include "neuronrt/client.h"
#include "neuronrt/session.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace neuron {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::StartsWith;

rtd::TensorLayout Layout(std::vector<int64_t> sizes, std::vector<int64_t> strides,
                         uint32_t address) {
  return rtd::TensorLayout{
      .dtype = 6, .sizes = std::move(sizes), .strides = std::move(strides),
      .address_index = address};
}

rtd::GraphNode Node(std::string name, std::string overload, std::vector<rtd::OpValue> arguments) {
  return rtd::GraphNode{.name = std::move(name), .overload = std::move(overload),
                        .arguments = std::move(arguments),
                        .return_lengths = {rtd::kTensorReturn}};
}

// relu(a @ b) * 2 to address 2, and b.copy_(b + 1) in place.
rtd::GraphPlan Graph(std::string name) {
  rtd::GraphPlan graph;
  graph.name = std::move(name);
  graph.inputs = {Layout({2, 2}, {2, 1}, 0), Layout({2, 2}, {2, 1}, 1)};
  graph.nodes = {Node("aten::mm", "", {rtd::GraphValue{0}, rtd::GraphValue{1}}),          // 2
                 Node("aten::relu", "", {rtd::GraphValue{2}}),                              // 3
                 Node("aten::mul", "Scalar", {rtd::GraphValue{3}, 2.0}),                    // 4
                 Node("aten::add", "Scalar", {rtd::GraphValue{1}, int64_t{1}}),             // 5
                 Node("aten::copy_", "", {rtd::GraphValue{1}, rtd::GraphValue{5}})};        // 6
  graph.outputs = {rtd::GraphOutput{.value = rtd::GraphValue{4},
                                    .destination = Layout({2, 2}, {2, 1}, 2)}};
  return graph;
}

// sum(a, 0, keepdim) expanded to a's shape, to address 2: a destination with
// a stride-0 dimension (an expansion), which holds one row.
rtd::GraphPlan ExpandedGraph(std::string name) {
  rtd::GraphPlan graph;
  graph.name = std::move(name);
  graph.inputs = {Layout({2, 2}, {2, 1}, 0)};
  graph.nodes = {
      Node("aten::sum", "dim_IntList",
           {rtd::GraphValue{0}, std::vector<int64_t>{0}, true, rtd::NoneValue{}}),  // 1
      Node("aten::expand", "", {rtd::GraphValue{1}, std::vector<int64_t>{2, 2}, false})};  // 2
  graph.outputs = {rtd::GraphOutput{.value = rtd::GraphValue{2},
                                    .destination = Layout({2, 2}, {0, 1}, 1)}};
  return graph;
}

class GraphCompilerTest : public ::testing::Test {
 protected:
  void StartDaemon(std::vector<std::string> args, const testing::Environment& env = {}) {
    stream_.reset();
    admin_.reset();
    session_.reset();
    daemon_.reset();
    socket_ = dir_.Join("rtd.sock");
    args.insert(args.end(), {"--socket", socket_, "--compiler-cache-dir", dir_.Join("cache")});
    auto daemon = testing::StartDaemon(args, env);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = *std::move(daemon);
    auto session = neuronrt::Session::Open({.client = {.address = "unix:" + socket_}});
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = *std::move(session);
    buffer_ = *session_->Allocate(0, 1 << 20);
    stream_ = *session_->CreateStream(0);
    admin_ = *neuronrt::Client::Connect({.address = "unix:" + socket_});
  }

  uint64_t At(uint64_t float_offset) const { return buffer_.device_address + float_offset * 4; }

  // Runs the graph on a = [[1, -2], [3, 4]], b = I and checks what it wrote.
  void LaunchAndCheck(uint64_t id) {
    const std::vector<float> a = {1, -2, 3, 4}, identity = {1, 0, 0, 1};
    ASSERT_TRUE(stream_->CopyToDevice(At(0), a.data(), 16).ok());
    ASSERT_TRUE(stream_->CopyToDevice(At(16), identity.data(), 16).ok());
    const uint64_t addresses[] = {At(0), At(16), At(32)};
    ASSERT_TRUE(stream_->Launch(id, addresses, {}).ok());
    std::vector<float> out(4), b(4);
    ASSERT_TRUE(stream_->CopyToHost(out.data(), At(32), 16).ok());
    ASSERT_TRUE(stream_->CopyToHost(b.data(), At(16), 16).ok());
    EXPECT_EQ(out, (std::vector<float>{2, 0, 6, 8}));
    EXPECT_EQ(b, (std::vector<float>{2, 1, 1, 2}));
  }

  neuronrt::CachedExecutable Status(uint64_t id) {
    absl::StatusOr<neuronrt::CacheInfo> info = admin_->GetCacheInfo(/*list_executables=*/true);
    EXPECT_TRUE(info.ok()) << info.status();
    for (const neuronrt::CachedExecutable& executable : info->executables) {
      if (executable.executable_id == id) return executable;
    }
    ADD_FAILURE() << "executable " << id << " is not listed";
    return {};
  }

  // Waits (a deadline, not a delay) until the daemon has looked for its
  // compiler worker's interpreter.
  neuronrt::CompilerInfo AwaitCompilerWorker() {
    const absl::Time deadline = absl::Now() + absl::Minutes(5);
    neuronrt::CompilerInfo compiler = admin_->Health()->compiler;
    while (!compiler.ready && compiler.unavailable.empty() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(50));
      compiler = admin_->Health()->compiler;
    }
    return compiler;
  }

  // Waits (a deadline, not a delay) until the graph's compile state is no
  // longer "interpreted" or "compiling".
  neuronrt::CachedExecutable AwaitCompileOutcome(uint64_t id) {
    const absl::Time deadline = absl::Now() + absl::Minutes(5);
    neuronrt::CachedExecutable status = Status(id);
    while ((status.compile_state == "compiling" || status.compile_state == "interpreted") &&
           absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(50));
      status = Status(id);
    }
    return status;
  }

  testing::TempDir dir_;
  std::string socket_;
  std::unique_ptr<testing::Subprocess> daemon_;
  std::unique_ptr<neuronrt::Session> session_;
  std::unique_ptr<neuronrt::Client> admin_;
  neuronrt::DeviceBuffer buffer_;
  std::shared_ptr<neuronrt::Stream> stream_;
};

TEST_F(GraphCompilerTest, AHotGraphRunsCompiledAndItsPackageOutlivesTheDaemon) {
  StartDaemon({"--compile-after-launches", "1", "--compiler-python", NEURON_PYTHON});
  const uint64_t id = *session_->LoadGraph(Graph("hot"));
  // neuronctl cache why: not compiled yet.
  EXPECT_THAT(Status(id).disk_cache, HasSubstr("not on disk: no package has this graph's key"));
  EXPECT_THAT(Status(id).compile_key, SizeIs(32));
  LaunchAndCheck(id);
  const neuronrt::CachedExecutable compiled = AwaitCompileOutcome(id);
  ASSERT_EQ(compiled.compile_state, "compiled");
  EXPECT_THAT(compiled.disk_cache, HasSubstr("on disk: a package with this graph's key"));
  EXPECT_EQ(compiled.tier, 1u);
  EXPECT_GT(compiled.compile_seconds, 0);
  LaunchAndCheck(id);  // on tier 1 now: the same results, the input written in place
  EXPECT_EQ(Status(id).launches, 2u);

  // A new daemon on the same cache finds the package: tier 1 from the load,
  // without starting the worker.
  StartDaemon({"--compile-after-launches", "1", "--compiler-python", NEURON_PYTHON});
  const uint64_t again = *session_->LoadGraph(Graph("hot"));
  EXPECT_EQ(Status(again).tier, 1u);
  LaunchAndCheck(again);
  // The same graph under another name (traced again, or by another
  // process) is the same code.
  const uint64_t renamed = *session_->LoadGraph(Graph("hot_traced_again"));
  EXPECT_EQ(Status(renamed).tier, 1u);
  const neuronrt::CacheInfo info = *admin_->GetCacheInfo();
  EXPECT_EQ(info.compiler.disk_hits, 2u);
  EXPECT_EQ(info.compiler.builds, 0u);
  EXPECT_EQ(info.compiler.disk_entries, 1u);

  // neuronctl cache clear --disk removes it.
  const neuronrt::ClearedCache cleared = *admin_->ClearCache(/*include_disk=*/true);
  EXPECT_EQ(cleared.disk_entries, 1u);
  EXPECT_EQ(admin_->GetCacheInfo()->compiler.disk_entries, 0u);
}

TEST_F(GraphCompilerTest, AnExpandedOutputIsWrittenOnceOnBothTiers) {
  StartDaemon({"--compile-after-launches", "1", "--compiler-python", NEURON_PYTHON});
  const uint64_t id = *session_->LoadGraph(ExpandedGraph("expanded"));
  auto launch_and_check = [&] {
    const std::vector<float> a = {1, -2, 3, 4};
    ASSERT_TRUE(stream_->CopyToDevice(At(0), a.data(), 16).ok());
    const uint64_t addresses[] = {At(0), At(16)};
    ASSERT_TRUE(stream_->Launch(id, addresses, {}).ok());
    std::vector<float> row(2);
    ASSERT_TRUE(stream_->CopyToHost(row.data(), At(16), 8).ok());
    EXPECT_EQ(row, (std::vector<float>{4, 2}));
  };
  launch_and_check();  // interpreted
  ASSERT_EQ(AwaitCompileOutcome(id).compile_state, "compiled");
  launch_and_check();  // compiled
}

// As the README starts it: no --compiler-python, and python3 on PATH has no
// torch. The daemon takes the interpreter that installed its libtorch.
TEST_F(GraphCompilerTest, ADaemonStartedByHandFindsThePythonOfItsTorch) {
  const std::string venv = std::filesystem::path(NEURON_PYTHON).parent_path().parent_path();
  const std::string path_without_torch = dir_.Join("bin");
  std::filesystem::create_directory(path_without_torch);
  std::filesystem::create_symlink("/bin/false", path_without_torch + "/python3");
  StartDaemon({"--compile-after-launches", "1"}, {{"PATH", path_without_torch + ":/usr/bin:/bin"}});
  const neuronrt::CompilerInfo compiler = AwaitCompilerWorker();
  ASSERT_TRUE(compiler.ready) << compiler.unavailable;
  EXPECT_THAT(compiler.python, StartsWith(venv + "/bin/python3"));
  EXPECT_THAT(compiler.worker_torch_version, StartsWith("2."));
  const uint64_t id = *session_->LoadGraph(Graph("found"));
  LaunchAndCheck(id);
  EXPECT_EQ(AwaitCompileOutcome(id).compile_state, "compiled");
}

TEST_F(GraphCompilerTest, AWorkerThatCannotStartLeavesGraphsInterpreted) {
  StartDaemon({"--compile-after-launches", "1", "--compiler-python", "/nonexistent/python3"});
  // Said at start, before any graph.
  const neuronrt::CompilerInfo compiler = AwaitCompilerWorker();
  EXPECT_FALSE(compiler.ready);
  EXPECT_THAT(compiler.unavailable, HasSubstr("no Python interpreter has this daemon's torch"));
  EXPECT_THAT(compiler.unavailable, HasSubstr("/nonexistent/python3"));
  const uint64_t id = *session_->LoadGraph(Graph("cold"));
  LaunchAndCheck(id);
  const neuronrt::CachedExecutable status = AwaitCompileOutcome(id);
  EXPECT_EQ(status.tier, 0u);
  EXPECT_THAT(status.compile_state,
              HasSubstr("interpreted (no Python interpreter has this daemon's torch"));
  EXPECT_THAT(admin_->GetCacheInfo()->compiler.unavailable, HasSubstr("did not start"));
  LaunchAndCheck(id);
}

TEST_F(GraphCompilerTest, ACompileThatTakesTooLongIsStoppedAndTheGraphStaysInterpreted) {
  // A worker that says it is ready, then never answers.
  const std::string worker = dir_.WriteFile(
      "stuck_worker.py",
      "import sys, time\n"
      "print('{\"ready\": true, \"torch\": \"2.13.0\", \"isa\": \"test\"}', flush=True)\n"
      "time.sleep(3600)\n");
  const std::string config = dir_.WriteFile(
      "rtd.toml", "[compiler]\nworker = \"" + worker + "\"\ntimeout_seconds = 1\n");
  StartDaemon({"--config", config, "--compile-after-launches", "1", "--compiler-python",
               NEURON_PYTHON});
  const uint64_t id = *session_->LoadGraph(Graph("stuck"));
  LaunchAndCheck(id);
  const neuronrt::CachedExecutable status = AwaitCompileOutcome(id);
  EXPECT_EQ(status.tier, 0u);
  EXPECT_THAT(status.compile_state, HasSubstr("did not compile within 1s"));
  const neuronrt::CacheInfo info = *admin_->GetCacheInfo();
  EXPECT_EQ(info.compiler.failures, 1u);
  EXPECT_TRUE(info.compiler.unavailable.empty());  // the next graph is tried
  LaunchAndCheck(id);
}

}  // namespace
}  // namespace neuron

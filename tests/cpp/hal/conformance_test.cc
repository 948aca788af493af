// The HAL conformance suite: what every device backend must do, written
// against daemon/hal/device.h alone and instantiated for each backend (as
// IREE's CTS is for its drivers). A new backend adds itself to kBackends.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "daemon/common/os_sys_calls.h"
#include "daemon/hal/backend_factory.h"
#include "daemon/hal/device.h"
#include "neuron/rtd/abi/command_ring.h"

namespace neuron::rtd::hal {
namespace {

using ::testing::HasSubstr;

struct BackendCase {
  std::string name;
  BackendOptions options;
};

const BackendCase kBackends[] = {
    {"sim_dev", BackendOptions{.kind = "sim", .logical_nc_config = 0, .sim_preset = "dev"}},
    {"sim_trn2_3xlarge",
     BackendOptions{.kind = "sim", .logical_nc_config = 0, .sim_preset = "trn2.3xlarge"}},
    // Real Trainium's backend over the fake libnrt of tests/fake_nrt: 8
    // logical cores (two chips at LNC 2) of 64 MiB each.
    {"nrt_fake", BackendOptions{.kind = "nrt", .nrt_library = NEURON_FAKE_NRT_LIBRARY}},
};

// The fake libnrt's instance, private to this test process: parallel tests
// must not compete for its cores.
class FakeNrtEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    char directory[] = "/tmp/fake-nrt-conformance-XXXXXX";
    ASSERT_NE(::mkdtemp(directory), nullptr);
    directory_ = directory;
    ::setenv("FAKE_NRT_DIR", directory, 1);
    ::setenv("FAKE_NRT_CORES", "8", 1);
    ::setenv("FAKE_NRT_HBM_BYTES", "67108864", 1);
    ::unsetenv("NEURON_RT_VISIBLE_CORES");
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

 private:
  std::string directory_;
};

const auto* const kFakeNrt = ::testing::AddGlobalTestEnvironment(new FakeNrtEnvironment);

constexpr int32_t kFloat32 = 6;  // c10::ScalarType::Float

TensorLayout Layout(std::vector<int64_t> sizes, std::vector<int64_t> strides, uint32_t address) {
  return TensorLayout{.dtype = kFloat32,
                      .sizes = std::move(sizes),
                      .strides = std::move(strides),
                      .address_index = address};
}

class HalConformanceTest : public ::testing::TestWithParam<BackendCase> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Backend>> backend =
        CreateBackend(GetParam().options, DefaultOsSysCalls());
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = *std::move(backend);
    ASSERT_FALSE(backend_->devices().empty());
    device_ = backend_->devices()[0];
    range_ = DeviceRange{.address = device_->hbm().address, .size = 4 * kHbmPageBytes};
    ASSERT_TRUE(device_->Acquire(range_, 0).ok());
  }
  void TearDown() override {
    if (device_ != nullptr) {
      EXPECT_TRUE(device_->Release(range_).ok());
    }
  }

  uint64_t At(uint64_t float_offset) const { return range_.address + float_offset * 4; }

  void Upload(uint64_t float_offset, const std::vector<float>& values) {
    ASSERT_TRUE(device_->CopyHostToDevice(At(float_offset), values.data(), values.size() * 4).ok());
  }
  std::vector<float> Download(uint64_t float_offset, size_t count) {
    std::vector<float> values(count);
    EXPECT_TRUE(device_->CopyDeviceToHost(values.data(), At(float_offset), count * 4).ok());
    return values;
  }

  std::unique_ptr<Backend> backend_;
  Device* device_ = nullptr;
  DeviceRange range_;
};

TEST_P(HalConformanceTest, DevicesAreNumberedAndTheirHbmIsPageAligned) {
  uint32_t first_core = 0;
  for (size_t i = 0; i < backend_->devices().size(); ++i) {
    const DeviceInfo& info = backend_->devices()[i]->info();
    EXPECT_EQ(info.index, i);
    EXPECT_EQ(info.first_core_index, first_core);
    EXPECT_GT(info.logical_cores(), 0u);
    first_core += info.logical_cores();
    const DeviceRange hbm = backend_->devices()[i]->hbm();
    EXPECT_EQ(hbm.address % kHbmPageBytes, 0u);
    EXPECT_EQ(hbm.size, info.hbm_total_bytes);
  }
  EXPECT_EQ(backend_->total_logical_cores(), first_core);
}

TEST_P(HalConformanceTest, CopiesRoundTripAndDeviceToDeviceMayOverlap) {
  Upload(0, {1, 2, 3, 4});
  EXPECT_EQ(Download(0, 4), (std::vector<float>{1, 2, 3, 4}));
  ASSERT_TRUE(device_->CopyDeviceToDevice(At(1), *device_, At(0), 3 * 4).ok());
  EXPECT_EQ(Download(0, 4), (std::vector<float>{1, 1, 2, 3}));
  EXPECT_TRUE(device_->CopyHostToDevice(At(0), nullptr, 0).ok());
}

TEST_P(HalConformanceTest, AcquiredMemoryReadsAsZerosWhateverItHeldBefore) {
  const DeviceRange other{.address = range_.end(), .size = kHbmPageBytes};
  ASSERT_TRUE(device_->Acquire(other, 0).ok());
  const std::vector<uint8_t> secret(kHbmPageBytes, 0x5c);
  ASSERT_TRUE(device_->CopyHostToDevice(other.address, secret.data(), secret.size()).ok());
  ASSERT_TRUE(device_->Release(other).ok());
  ASSERT_TRUE(device_->Acquire(other, 0).ok());
  std::vector<uint8_t> read(kHbmPageBytes, 1);
  ASSERT_TRUE(device_->CopyDeviceToHost(read.data(), other.address, read.size()).ok());
  EXPECT_EQ(read, std::vector<uint8_t>(kHbmPageBytes, 0));
  EXPECT_TRUE(device_->Release(other).ok());
}

TEST_P(HalConformanceTest, TheDaemonsOwnMemoryIsNeverCountedAsTheRuntimes) {
  // Every backend here can tell (libnrt with nrt_get_vnc_memory_stats).
  const std::optional<uint64_t> before = device_->Telemetry().runtime_hbm_bytes;
  ASSERT_TRUE(before.has_value());
  const DeviceRange other{.address = range_.end(), .size = 16 * kHbmPageBytes};
  ASSERT_TRUE(device_->Acquire(other, 0).ok());
  EXPECT_EQ(device_->Telemetry().runtime_hbm_bytes, before);
  ASSERT_TRUE(device_->Release(other).ok());
  EXPECT_EQ(device_->Telemetry().runtime_hbm_bytes, before);
}

TEST_P(HalConformanceTest, CopiesReachMemoryOfEveryCoreAndDevice) {
  // A range in the HBM of each core of each device; a value travels through
  // all of them, device to device.
  std::vector<std::pair<Device*, DeviceRange>> ranges;
  for (Device* device : backend_->devices()) {
    for (uint32_t core = 0; core < device->info().logical_cores(); ++core) {
      const DeviceRange range{.address = device->hbm().address + (8 + core) * kHbmPageBytes,
                              .size = kHbmPageBytes};
      ASSERT_TRUE(device->Acquire(range, core).ok()) << device->info().index << " " << core;
      ranges.emplace_back(device, range);
    }
  }
  const std::vector<float> values = {3, 1, 4, 1, 5, 9, 2, 6};
  ASSERT_TRUE(ranges[0]
                  .first->CopyHostToDevice(ranges[0].second.address, values.data(),
                                           values.size() * 4)
                  .ok());
  for (size_t i = 1; i < ranges.size(); ++i) {
    ASSERT_TRUE(ranges[i]
                    .first
                    ->CopyDeviceToDevice(ranges[i].second.address, *ranges[i - 1].first,
                                         ranges[i - 1].second.address, values.size() * 4)
                    .ok())
        << i;
  }
  std::vector<float> out(values.size());
  ASSERT_TRUE(ranges.back()
                  .first->CopyDeviceToHost(out.data(), ranges.back().second.address,
                                           out.size() * 4)
                  .ok());
  EXPECT_EQ(out, values);
  for (auto& [device, range] : ranges) EXPECT_TRUE(device->Release(range).ok());
}

TEST_P(HalConformanceTest, TheCollectiveEngineReducesEveryOperandInPlaceOrNot) {
  Upload(0, {1, 2, 3});
  Upload(4, {10, 20, 30});
  Upload(8, {100, 200, 300});
  std::vector<ReduceOperand> sources = {{device_, At(0)}, {device_, At(4)}, {device_, At(8)}};
  auto reduce = [&](ReduceOp op, uint64_t destination, double scale = 0) {
    return device_->Reduce(
        Reduction{.op = op, .type = ElementType::kFloat32, .count = 3, .scale = scale},
        destination, sources);
  };
  ASSERT_TRUE(reduce(ReduceOp::kSum, At(12)).ok());
  EXPECT_EQ(Download(12, 3), (std::vector<float>{111, 222, 333}));
  ASSERT_TRUE(reduce(ReduceOp::kMax, At(12)).ok());
  EXPECT_EQ(Download(12, 3), (std::vector<float>{100, 200, 300}));
  ASSERT_TRUE(reduce(ReduceOp::kPremulSum, At(12), 0.5).ok());
  EXPECT_EQ(Download(12, 3), (std::vector<float>{55.5, 111, 166.5}));
  // In place: the destination is the first operand.
  ASSERT_TRUE(reduce(ReduceOp::kAvg, At(0)).ok());
  EXPECT_EQ(Download(0, 3), (std::vector<float>{37, 74, 111}));
  // Integer averages round toward zero; bool averages are refused.
  const std::vector<int32_t> ints = {-7, 7};
  ASSERT_TRUE(device_->CopyHostToDevice(At(16), ints.data(), 8).ok());
  ASSERT_TRUE(device_->CopyHostToDevice(At(18), std::vector<int32_t>{0, 0}.data(), 8).ok());
  std::vector<ReduceOperand> int_sources = {{device_, At(16)}, {device_, At(18)}};
  ASSERT_TRUE(device_->Reduce(Reduction{.op = ReduceOp::kAvg, .type = ElementType::kInt32,
                                        .count = 2},
                              At(20), int_sources)
                  .ok());
  std::vector<int32_t> averaged(2);
  ASSERT_TRUE(device_->CopyDeviceToHost(averaged.data(), At(20), 8).ok());
  EXPECT_EQ(averaged, (std::vector<int32_t>{-3, 3}));
  EXPECT_FALSE(device_->Reduce(Reduction{.op = ReduceOp::kAvg, .type = ElementType::kBool,
                                         .count = 2},
                               At(20), int_sources)
                   .ok());
  EXPECT_FALSE(device_->Reduce(Reduction{.op = ReduceOp::kPremulSum, .type = ElementType::kInt32,
                                         .count = 2, .scale = 2},
                               At(20), int_sources)
                   .ok());
}

TEST_P(HalConformanceTest, FillRepeatsEveryPatternWidthAndRefusesOthers) {
  for (uint32_t width : {1u, 2u, 4u, 8u}) {
    ASSERT_TRUE(device_->Fill(At(0), 16, 0x0102030405060708ull, width).ok()) << width;
    std::vector<uint8_t> bytes(16);
    ASSERT_TRUE(device_->CopyDeviceToHost(bytes.data(), At(0), 16).ok());
    for (size_t i = 0; i < bytes.size(); ++i) {
      EXPECT_EQ(bytes[i], static_cast<uint8_t>(0x0102030405060708ull >> (8 * (i % width))))
          << "width " << width << " byte " << i;
    }
  }
  EXPECT_THAT(device_->Fill(At(0), 16, 0, 3).message(), HasSubstr("not 1, 2, 4 or 8"));
  EXPECT_THAT(device_->Fill(At(0), 6, 0, 4).message(), HasSubstr("not a multiple"));
}

TEST_P(HalConformanceTest, BuiltinAddRuns) {
  Upload(0, {1, 2});
  Upload(16, {10, 20});
  const uint64_t count = 2;
  const uint64_t arguments[] = {At(0), At(16), At(32)};
  ASSERT_TRUE(device_
                  ->RunAddF32(arguments, {reinterpret_cast<const uint8_t*>(&count), sizeof(count)})
                  .ok());
  EXPECT_EQ(Download(32, 2), (std::vector<float>{11, 22}));
  EXPECT_FALSE(device_->RunAddF32(arguments, {}).ok());
}

TEST_P(HalConformanceTest, PreparedExecutablesDispatchWithTheirBindings) {
  EagerOpPlan spec;
  spec.name = "aten::mm";
  spec.arguments = {Layout({2, 2}, {2, 1}, 0), Layout({2, 2}, {2, 1}, 1)};
  spec.outputs = {Layout({2, 2}, {2, 1}, 2)};
  absl::StatusOr<std::unique_ptr<Executable>> mm = backend_->PrepareExecutable(spec);
  ASSERT_TRUE(mm.ok()) << mm.status();
  EXPECT_EQ((*mm)->backend(), device_->info().backend);
  Upload(0, {1, 2, 3, 4});
  Upload(16, {1, 0, 0, 1});
  const uint64_t bindings[] = {At(0), At(16), At(32)};
  ASSERT_TRUE(device_->Dispatch(**mm, 0, bindings, {}).ok());
  EXPECT_EQ(Download(32, 4), (std::vector<float>{1, 2, 3, 4}));
  // The same executable with other bindings: nothing of a launch stays.
  const uint64_t swapped[] = {At(16), At(0), At(48)};
  ASSERT_TRUE(device_->Dispatch(**mm, 0, swapped, {}).ok());
  EXPECT_EQ(Download(48, 4), (std::vector<float>{1, 2, 3, 4}));
}

TEST_P(HalConformanceTest, SpecsThatDoNotFitTheirOperatorAreRefusedAtPreparation) {
  EagerOpPlan unknown;
  unknown.name = "aten::no_such_operator";
  EXPECT_EQ(backend_->PrepareExecutable(unknown).status().code(),
            absl::StatusCode::kInvalidArgument);
  EagerOpPlan missing;
  missing.name = "aten::addmm";
  EXPECT_THAT(backend_->PrepareExecutable(missing).status().message(),
              HasSubstr("argument 0 (self) is missing"));
  EagerOpPlan wrong_kind;
  wrong_kind.name = "aten::neg";
  wrong_kind.arguments = {int64_t{3}};
  EXPECT_THAT(backend_->PrepareExecutable(wrong_kind).status().message(),
              HasSubstr("argument 0 (self) of type Tensor"));
}

TEST_P(HalConformanceTest, OperatorErrorsCarryTheirTypeAndLeaveTheDeviceUsable) {
  EagerOpPlan spec;
  spec.name = "aten::mm";
  spec.arguments = {Layout({2, 3}, {3, 1}, 0), Layout({2, 2}, {2, 1}, 1)};
  spec.outputs = {Layout({2, 2}, {2, 1}, 2)};
  absl::StatusOr<std::unique_ptr<Executable>> mm = backend_->PrepareExecutable(spec);
  ASSERT_TRUE(mm.ok()) << mm.status();
  const uint64_t bindings[] = {At(0), At(16), At(32)};
  absl::Status status = device_->Dispatch(**mm, 0, bindings, {});
  EXPECT_THAT(status.message(), HasSubstr("cannot be multiplied"));
  EXPECT_TRUE(status.GetPayload(kOperatorErrorTypePayload).has_value());
  Upload(0, {7});
  EXPECT_EQ(Download(0, 1), std::vector<float>{7});
}

TEST_P(HalConformanceTest, AResultOfOtherSizesThanPlannedIsAnOperatorError) {
  // A client whose meta inference predicted other sizes than the kernel
  // produces: the call fails, the device (and the stream) go on.
  EagerOpPlan spec;
  spec.name = "aten::mm";
  spec.arguments = {Layout({2, 2}, {2, 1}, 0), Layout({2, 2}, {2, 1}, 1)};
  spec.outputs = {Layout({4}, {1}, 2)};
  absl::StatusOr<std::unique_ptr<Executable>> mm = backend_->PrepareExecutable(spec);
  ASSERT_TRUE(mm.ok()) << mm.status();
  Upload(32, {5, 5, 5, 5});
  const uint64_t bindings[] = {At(0), At(16), At(32)};
  absl::Status status = device_->Dispatch(**mm, 0, bindings, {});
  EXPECT_THAT(status.message(), HasSubstr("where meta inference predicted [4]"));
  EXPECT_TRUE(status.GetPayload(kOperatorErrorTypePayload).has_value());
  EXPECT_EQ(Download(32, 4), (std::vector<float>{5, 5, 5, 5}));
}

TEST_P(HalConformanceTest, IndicesAKernelTrustsAreCheckedBeforeItFollowsThem) {
  // The CPU kernel reads grad[offset2bag[i]] unchecked: a hostile bag
  // number must be an IndexError, not a read past the buffer.
  constexpr int32_t kInt64 = 4;  // c10::ScalarType::Long
  auto longs = [](std::vector<int64_t> sizes, uint32_t address) {
    return TensorLayout{.dtype = kInt64, .sizes = sizes, .strides = {1},
                        .address_index = address};
  };
  EagerOpPlan spec;
  spec.name = "aten::_embedding_bag_per_sample_weights_backward";
  spec.arguments = {Layout({2, 2}, {2, 1}, 0), Layout({4, 2}, {2, 1}, 1), longs({2}, 2),
                    longs({2}, 3), longs({2}, 4), int64_t{0}, int64_t{-1}};
  spec.outputs = {Layout({2}, {1}, 5)};
  absl::StatusOr<std::unique_ptr<Executable>> backward = backend_->PrepareExecutable(spec);
  ASSERT_TRUE(backward.ok()) << backward.status();
  const int64_t indices[] = {1, 3};
  const int64_t offsets[] = {0, 1};
  const int64_t hostile_offset2bag[] = {0, int64_t{1} << 40};
  ASSERT_TRUE(device_->CopyHostToDevice(At(32), indices, sizeof(indices)).ok());
  ASSERT_TRUE(device_->CopyHostToDevice(At(40), offsets, sizeof(offsets)).ok());
  ASSERT_TRUE(device_->CopyHostToDevice(At(48), hostile_offset2bag, sizeof(hostile_offset2bag))
                  .ok());
  const uint64_t bindings[] = {At(0), At(16), At(32), At(40), At(48), At(56)};
  absl::Status status = device_->Dispatch(**backward, 0, bindings, {});
  EXPECT_THAT(status.message(), HasSubstr("offset2bag holds 1099511627776, out of range [0, 2)"));
  EXPECT_EQ(status.GetPayload(kOperatorErrorTypePayload).value_or(absl::Cord()), "IndexError");
  const int64_t offset2bag[] = {0, 1};
  ASSERT_TRUE(device_->CopyHostToDevice(At(48), offset2bag, sizeof(offset2bag)).ok());
  EXPECT_TRUE(device_->Dispatch(**backward, 0, bindings, {}).ok());
}

// relu(a @ b) + a, written to output 2, and a's running update
// a.copy_(a * 2) as a batch norm's statistics are written: four nodes.
GraphPlan MatmulReluAddGraph() {
  GraphPlan graph;
  graph.name = "test";
  graph.inputs = {Layout({2, 2}, {2, 1}, 0), Layout({2, 2}, {2, 1}, 1)};
  graph.nodes = {
      GraphNode{.name = "aten::mm", .overload = "", .arguments = {GraphValue{0}, GraphValue{1}},
                .return_lengths = {kTensorReturn}},                                    // value 2
      GraphNode{.name = "aten::relu", .overload = "", .arguments = {GraphValue{2}},
                .return_lengths = {kTensorReturn}},                                    // value 3
      GraphNode{.name = "aten::add",
                .overload = "Tensor",
                .arguments = {GraphValue{3}, GraphValue{0}},
                .return_lengths = {kTensorReturn}},                                    // value 4
      GraphNode{.name = "aten::mul", .overload = "Scalar", .arguments = {GraphValue{1}, 2.0},
                .return_lengths = {kTensorReturn}},                                    // value 5
      GraphNode{.name = "aten::copy_", .overload = "", .arguments = {GraphValue{1}, GraphValue{5}},
                .return_lengths = {kTensorReturn}},                                    // value 6
  };
  graph.outputs = {GraphOutput{.value = GraphValue{4}, .destination = Layout({2, 2}, {2, 1}, 2)}};
  return graph;
}

TEST_P(HalConformanceTest, AGraphRunsItsNodesInOneDispatch) {
  absl::StatusOr<std::unique_ptr<Executable>> graph =
      backend_->PrepareExecutable(MatmulReluAddGraph());
  ASSERT_TRUE(graph.ok()) << graph.status();
  Upload(0, {1, -2, 3, 4});
  Upload(16, {1, 0, 0, 1});
  const uint64_t bindings[] = {At(0), At(16), At(32)};
  ASSERT_TRUE(device_->Dispatch(**graph, 0, bindings, {}).ok());
  EXPECT_EQ(Download(32, 4), (std::vector<float>{2, -2, 6, 8}));
  // The input it wrote in place.
  EXPECT_EQ(Download(16, 4), (std::vector<float>{2, 0, 0, 2}));
}

TEST_P(HalConformanceTest, GraphsThatDoNotFitTheirOperatorsAreRefusedNamingTheNode) {
  GraphPlan unknown = MatmulReluAddGraph();
  unknown.nodes[1].name = "aten::no_such_operator";
  EXPECT_THAT(backend_->PrepareExecutable(unknown).status().message(),
              HasSubstr("graph 'test' node 1"));
  GraphPlan wrong_returns = MatmulReluAddGraph();
  wrong_returns.nodes[0].return_lengths = {2};
  EXPECT_THAT(backend_->PrepareExecutable(wrong_returns).status().message(),
              HasSubstr("node 0: aten::mm return 0 is a Tensor; the node declares a list of 2"));
  GraphPlan address_argument = MatmulReluAddGraph();
  address_argument.nodes[0].arguments[0] = Layout({2, 2}, {2, 1}, 0);
  EXPECT_THAT(backend_->PrepareExecutable(address_argument).status().message(),
              HasSubstr("node 0: aten::mm argument 0 (self) of type Tensor"));
  GraphPlan random = MatmulReluAddGraph();
  random.nodes[1] = GraphNode{.name = "aten::rand_like", .overload = "",
                              .arguments = {GraphValue{2}}, .return_lengths = {kTensorReturn}};
  EXPECT_THAT(backend_->PrepareExecutable(random).status().message(),
              HasSubstr("random and the graph has no generator seed"));
}

TEST_P(HalConformanceTest, ANodesErrorNamesTheNodeAndLeavesTheDeviceUsable) {
  GraphPlan graph = MatmulReluAddGraph();
  graph.inputs[0] = Layout({2, 3}, {3, 1}, 0);
  graph.nodes[2].arguments[1] = GraphValue{3};
  absl::StatusOr<std::unique_ptr<Executable>> prepared = backend_->PrepareExecutable(graph);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  const uint64_t bindings[] = {At(0), At(16), At(32)};
  absl::Status status = device_->Dispatch(**prepared, 0, bindings, {});
  EXPECT_THAT(status.message(), HasSubstr("graph 'test' node 0 (aten::mm): "));
  EXPECT_THAT(status.message(), HasSubstr("cannot be multiplied"));
  EXPECT_TRUE(status.GetPayload(kOperatorErrorTypePayload).has_value());
  Upload(0, {7});
  EXPECT_EQ(Download(0, 1), std::vector<float>{7});
}

TEST_P(HalConformanceTest, AGraphsRandomNumbersRepeatWithItsSeed) {
  GraphPlan graph;
  graph.name = "dropout";
  graph.inputs = {Layout({64}, {1}, 0)};
  graph.nodes = {GraphNode{.name = "aten::rand_like", .overload = "",
                           .arguments = {GraphValue{0}}, .return_lengths = {kTensorReturn}},
                 GraphNode{.name = "aten::rand_like", .overload = "",
                           .arguments = {GraphValue{0}}, .return_lengths = {kTensorReturn}}};
  graph.outputs = {GraphOutput{.value = GraphValue{1}, .destination = Layout({64}, {1}, 1)},
                   GraphOutput{.value = GraphValue{2}, .destination = Layout({64}, {1}, 2)}};
  graph.generator = GeneratorSeed{.offset = 0};
  absl::StatusOr<std::unique_ptr<Executable>> prepared = backend_->PrepareExecutable(graph);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  auto run = [&](uint64_t seed, uint64_t first, uint64_t second) {
    const uint64_t bindings[] = {At(0), At(first), At(second)};
    EXPECT_TRUE(device_->Dispatch(**prepared, 0, bindings,
                                  {reinterpret_cast<const uint8_t*>(&seed), sizeof(seed)})
                    .ok());
  };
  run(7, 64, 128);
  run(7, 192, 256);
  run(8, 320, 384);
  EXPECT_EQ(Download(64, 64), Download(192, 64));
  EXPECT_EQ(Download(128, 64), Download(256, 64));
  // Two random nodes draw different numbers; another seed, others again.
  EXPECT_NE(Download(64, 64), Download(128, 64));
  EXPECT_NE(Download(64, 64), Download(320, 64));
}

INSTANTIATE_TEST_SUITE_P(Backends, HalConformanceTest, ::testing::ValuesIn(kBackends),
                         [](const ::testing::TestParamInfo<BackendCase>& backend) {
                           return backend.param.name;
                         });

}  // namespace
}  // namespace neuron::rtd::hal

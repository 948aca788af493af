// Graph executables (torch.compile): a whole graph of ATen operators loaded
// once and run by one LAUNCH, checked at load node by node, its inputs and
// outputs checked against the session's memory at each launch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "e2e/eager_op_builders.h"
#include "e2e/executable_fixture.h"
#include "neuron/rtd/abi/command_ring.h"
#include "neuron/rtd/graph_plan.h"
#include "neuron/rtd/v1/executable.pb.h"

namespace neuron {
namespace {

namespace v1 = rtd::v1;
using ::testing::HasSubstr;
using testing::Spec;

constexpr int32_t kFloat32 = 6;

rtd::TensorLayout Layout(std::vector<int64_t> sizes, std::vector<int64_t> strides,
                         uint32_t address) {
  return rtd::TensorLayout{
      .dtype = kFloat32, .sizes = std::move(sizes), .strides = std::move(strides),
      .address_index = address};
}

rtd::GraphNode Node(std::string name, std::string overload, std::vector<rtd::OpValue> arguments) {
  return rtd::GraphNode{.name = std::move(name),
                        .overload = std::move(overload),
                        .arguments = std::move(arguments),
                        .return_lengths = {rtd::kTensorReturn}};
}

// relu(a @ b) + a to address 2, and b.copy_(b * 2) in place.
rtd::GraphPlan ForwardGraph() {
  rtd::GraphPlan graph;
  graph.name = "forward_0";
  graph.inputs = {Layout({2, 2}, {2, 1}, 0), Layout({2, 2}, {2, 1}, 1)};
  graph.nodes = {Node("aten::mm", "", {rtd::GraphValue{0}, rtd::GraphValue{1}}),      // 2
                 Node("aten::relu", "", {rtd::GraphValue{2}}),                          // 3
                 Node("aten::add", "Tensor", {rtd::GraphValue{3}, rtd::GraphValue{0}}),  // 4
                 Node("aten::mul", "Scalar", {rtd::GraphValue{1}, 2.0}),                 // 5
                 Node("aten::copy_", "", {rtd::GraphValue{1}, rtd::GraphValue{5}})};     // 6
  graph.outputs = {rtd::GraphOutput{.value = rtd::GraphValue{4},
                                    .destination = Layout({2, 2}, {2, 1}, 2)}};
  return graph;
}

std::string GraphBody(const v1::GraphExecutable& graph) {
  v1::ExecutableBody body;
  *body.mutable_graph() = graph;
  return body.SerializeAsString();
}

using Kind = neuronrt::Session::ExecutableKind;

class GraphExecutableTest : public ExecutableTest {};

TEST_F(GraphExecutableTest, AGraphRunsInOneLaunchAndWritesItsOutputs) {
  absl::StatusOr<uint64_t> id = session_->LoadGraph(ForwardGraph(), "forward_0");
  ASSERT_TRUE(id.ok()) << id.status();
  Upload(0, {1, -2, 3, 4});
  Upload(16, {1, 0, 0, 1});
  const uint64_t addresses[] = {At(0), At(16), At(32)};
  ASSERT_TRUE(stream_->Launch(*id, addresses, {}, "forward_0").ok());
  EXPECT_EQ(Download(32, 4), (std::vector<float>{2, -2, 6, 8}));
  EXPECT_EQ(Download(16, 4), (std::vector<float>{2, 0, 0, 2}));
  // Loaded once per host, as every executable.
  EXPECT_EQ(*session_->LoadGraph(ForwardGraph()), *id);
}

TEST_F(GraphExecutableTest, AGraphTakesThousandsOfAddressesInOneLaunch) {
  // A compiled step's inputs and outputs: parameters, activations, states.
  constexpr uint32_t kTensors = 1500;
  rtd::GraphPlan graph;
  graph.name = "wide";
  for (uint32_t i = 0; i < kTensors; ++i) {
    graph.inputs.push_back(Layout({1}, {1}, i));
    graph.nodes.push_back(Node("aten::mul", "Scalar", {rtd::GraphValue{i}, 3.0}));
    graph.outputs.push_back(rtd::GraphOutput{.value = rtd::GraphValue{kTensors + i},
                                             .destination = Layout({1}, {1}, kTensors + i)});
  }
  absl::StatusOr<uint64_t> id = session_->LoadGraph(graph);
  ASSERT_TRUE(id.ok()) << id.status();
  std::vector<float> values(kTensors);
  for (uint32_t i = 0; i < kTensors; ++i) values[i] = static_cast<float>(i);
  Upload(0, values);
  std::vector<uint64_t> addresses;
  for (uint32_t i = 0; i < 2 * kTensors; ++i) addresses.push_back(At(i));
  ASSERT_TRUE(stream_->Launch(*id, addresses, {}).ok());
  const std::vector<float> tripled = Download(kTensors, kTensors);
  for (uint32_t i = 0; i < kTensors; i += 97) EXPECT_EQ(tripled[i], 3.0f * i) << i;
  EXPECT_EQ(tripled.back(), 3.0f * (kTensors - 1));
}

TEST_F(GraphExecutableTest, MalformedGraphsAreRefusedAtLoadNamingWhere) {
  auto refused = [&](const v1::GraphExecutable& graph) {
    absl::StatusOr<uint64_t> id = session_->LoadExecutable(GraphBody(graph), "bad", Kind::kGraph);
    EXPECT_FALSE(id.ok());
    return std::string(id.status().message());
  };
  auto base = [] {
    v1::GraphExecutable graph;
    graph.set_name("g");
    *graph.add_inputs() = Spec({2}, {1}, 0);
    v1::GraphNode* neg = graph.add_nodes();
    neg->set_name("aten::neg");
    neg->add_arguments()->set_graph_value(0);
    neg->add_return_lengths(-1);
    v1::GraphOutput* output = graph.add_outputs();
    output->set_value(1);
    *output->mutable_destination() = Spec({2}, {1}, 1);
    return graph;
  };
  ASSERT_TRUE(session_->LoadExecutable(GraphBody(base()), "good", Kind::kGraph).ok());

  v1::GraphExecutable forward = base();
  forward.mutable_nodes(0)->mutable_arguments(0)->set_graph_value(1);
  EXPECT_THAT(refused(forward), HasSubstr("graph 'g' node 0 (aten::neg) argument 0: value 1 is "
                                          "not defined before it (1 values are)"));
  v1::GraphExecutable past_end = base();
  past_end.mutable_outputs(0)->set_value(7);
  EXPECT_THAT(refused(past_end), HasSubstr("graph 'g' output 0: value 7 is not defined"));
  v1::GraphExecutable address = base();
  *address.mutable_nodes(0)->mutable_arguments(0)->mutable_tensor() = Spec({2}, {1}, 0);
  EXPECT_THAT(refused(address), HasSubstr("a graph node's tensors are graph values"));
  v1::GraphExecutable immediate = base();
  immediate.mutable_nodes(0)->mutable_arguments(0)->mutable_immediate()->set_offset(0);
  EXPECT_THAT(refused(immediate), HasSubstr("no per-launch scalars"));
  v1::GraphExecutable returns = base();
  returns.mutable_nodes(0)->set_return_lengths(0, -5);
  EXPECT_THAT(refused(returns), HasSubstr("return length -5"));
  v1::GraphExecutable wrong_return = base();
  wrong_return.mutable_nodes(0)->set_return_lengths(0, 3);
  EXPECT_THAT(refused(wrong_return), HasSubstr("node 0: aten::neg return 0 is a Tensor"));
  v1::GraphExecutable foreign = base();
  foreign.mutable_nodes(0)->set_name("torchvision::nms");
  EXPECT_THAT(refused(foreign), HasSubstr("not an ATen or prims operator"));
  v1::GraphExecutable forbidden = base();
  forbidden.mutable_nodes(0)->set_name("aten::save");
  EXPECT_THAT(refused(forbidden), HasSubstr("touches host files"));
  v1::GraphExecutable huge = base();
  for (int i = 0; i < (1 << 16); ++i) *huge.add_nodes() = base().nodes(0);
  EXPECT_THAT(refused(huge), HasSubstr("65537 nodes (at most 65536)"));
  // A graph announced as an eager op, and the reverse (bodies not loaded
  // before: a body's hash finds it whatever kind the lookup names).
  v1::GraphExecutable unseen = base();
  unseen.set_name("unseen");
  EXPECT_THAT(std::string(session_->LoadExecutable(GraphBody(unseen), "x", Kind::kEagerOp)
                              .status()
                              .message()),
              HasSubstr("holds no eager op"));
  EXPECT_THAT(std::string(session_->LoadExecutable(testing::NegBody(3), "x", Kind::kGraph)
                              .status()
                              .message()),
              HasSubstr("holds no graph"));
}

TEST_F(GraphExecutableTest, ANodesErrorFailsItsLaunchNamingTheNodeAndTheStreamGoesOn) {
  rtd::GraphPlan graph = ForwardGraph();
  graph.inputs[0] = Layout({2, 3}, {3, 1}, 0);
  graph.nodes[2].arguments[1] = rtd::GraphValue{3};
  const uint64_t id = *session_->LoadGraph(graph);
  const uint64_t addresses[] = {At(0), At(16), At(32)};
  ASSERT_TRUE(stream_->Launch(id, addresses, {}, "forward_0").ok());
  absl::Status status = stream_->Synchronize();
  EXPECT_THAT(status.message(), HasSubstr("graph 'forward_0' node 0 (aten::mm): "));
  EXPECT_THAT(status.message(), HasSubstr("cannot be multiplied"));
  const auto type = status.GetPayload(neuronrt::kOperatorErrorTypePayload);
  ASSERT_TRUE(type.has_value());
  EXPECT_EQ(std::string(*type), "RuntimeError");
  EXPECT_TRUE(stream_->Synchronize().ok());
  Upload(0, {5});
  EXPECT_EQ(Download(0, 1), std::vector<float>{5});
}

TEST_F(GraphExecutableTest, ALaunchsInputsAndOutputsMustBeTheSessionsMemory) {
  const uint64_t id = *session_->LoadGraph(ForwardGraph());
  const uint64_t past_end[] = {At(0), At(16), buffer_.device_address + buffer_.size - 8};
  ASSERT_TRUE(stream_->Launch(id, past_end, {}).ok());
  absl::Status fault = stream_->Synchronize();
  EXPECT_THAT(fault.message(), HasSubstr("past the end of segment"));
  EXPECT_TRUE(fault.GetPayload(neuronrt::kStreamFaultPayload).has_value());
  auto other = *session_->CreateStream(0);
  const uint64_t too_few[] = {At(0), At(16)};
  ASSERT_TRUE(other->Launch(id, too_few, {}).ok());
  EXPECT_THAT(other->Synchronize().message(),
              HasSubstr("(graph 'forward_0') takes 3 addresses; the launch gave 2"));
}

}  // namespace
}  // namespace neuron

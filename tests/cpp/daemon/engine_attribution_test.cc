// The simulated device's engine attribution by operator class.
#include "daemon/hal/sim/engine_attribution.h"

#include <gtest/gtest.h>

namespace neuron::rtd::hal::sim {
namespace {

TEST(EngineAttributionTest, ClassifiesOperatorsByTheirBaseName) {
  const struct {
    const char* op_name;
    Engine engine;
  } cases[] = {
      {"aten::addmm", Engine::kTensor},         {"aten::convolution", Engine::kTensor},
      {"aten::mm.out", Engine::kTensor},        {"aten::exp", Engine::kScalar},
      {"aten::rsqrt", Engine::kScalar},         {"aten::tanh_backward", Engine::kScalar},
      {"aten::index_put_", Engine::kGpSimd},    {"aten::embedding", Engine::kGpSimd},
      {"aten::add.Tensor", Engine::kVector},    {"aten::native_layer_norm", Engine::kVector},
      {"graph:forward_0", Engine::kUnspecified}, {"aten::", Engine::kVector},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(SimEngineOf(CommandKind::kLaunch, c.op_name), c.engine) << c.op_name;
  }
  EXPECT_EQ(SimEngineOf(CommandKind::kTransfer, "aten::mm"), Engine::kDma);
  EXPECT_EQ(SimEngineOf(CommandKind::kTransfer, ""), Engine::kDma);
  EXPECT_EQ(SimEngineOf(CommandKind::kCollective, "allreduce"), Engine::kCollective);
  EXPECT_EQ(SimEngineOf(CommandKind::kSync, "wait_event"), Engine::kSync);
}

}  // namespace
}  // namespace neuron::rtd::hal::sim

// The NKI interpreter's arithmetic: what a NeuronCore's engines do with a
// write (rounding to the destination's dtype), PSUM accumulation, per-
// partition operands, reductions, and new tiles that hold NaN.
#include "daemon/hal/sim/nki/nki_interpreter.h"

#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace neuron::rtd::nki {
namespace {

using ::testing::HasSubstr;

constexpr int32_t kFloat = 6;
constexpr int32_t kBFloat16 = 15;

NkiAccess Whole(uint32_t allocation, int64_t rows, int64_t columns) {
  return NkiAccess{.allocation = allocation, .offset = 0,
                   .dims = {{.stride = columns, .count = rows}, {.stride = 1, .count = columns}}};
}

NkiAllocation Hbm(uint32_t index, int32_t dtype, int64_t elements) {
  return NkiAllocation{.space = NkiSpace::kHbm, .dtype = dtype, .name = "hbm",
                       .address_index = index, .elements = elements};
}

NkiAllocation OnChip(NkiSpace space, int32_t dtype, uint32_t rows, int64_t columns,
                     uint64_t byte_offset = 0) {
  return NkiAllocation{.space = space, .dtype = dtype, .name = "tile", .partitions = rows,
                       .free_elements = columns, .byte_offset = byte_offset};
}

class NkiInterpreterTest : public ::testing::Test {
 protected:
  absl::Status Run(const NkiKernelPlan& plan, std::vector<at::Tensor>& tensors) {
    EXPECT_EQ(CheckNkiKernel(plan), "");
    std::vector<NkiHbmBuffer> buffers;
    for (at::Tensor& tensor : tensors) {
      buffers.push_back({.data = tensor.data_ptr(), .bytes = tensor.nbytes()});
    }
    return RunNkiKernel(plan, buffers, memory_);
  }

  NkiCoreMemory memory_{NkiTarget{}};
};

TEST_F(NkiInterpreterTest, RoundsEachWriteToItsDestinationsDtype) {
  // out(bf16) = in(f32) + in: the sum is rounded once, on the write.
  NkiKernelPlan plan;
  plan.allocations = {Hbm(0, kFloat, 8), Hbm(1, kBFloat16, 8),
                      OnChip(NkiSpace::kSbuf, kFloat, 2, 4),
                      OnChip(NkiSpace::kSbuf, kBFloat16, 2, 4, 64)};
  plan.instructions = {
      {.opcode = NkiOpcode::kDmaCopy, .operands = {Whole(2, 2, 4), Whole(0, 2, 4)}},
      {.opcode = NkiOpcode::kTensorTensor,
       .operands = {Whole(3, 2, 4), Whole(2, 2, 4), Whole(2, 2, 4)},
       .alu = {NkiAluOp::kAdd}},
      {.opcode = NkiOpcode::kDmaCopy, .operands = {Whole(1, 2, 4), Whole(3, 2, 4)}}};
  at::Tensor input = at::linspace(1.001, 1.009, 8);
  std::vector<at::Tensor> tensors = {input, at::zeros({8}, at::kBFloat16)};
  ASSERT_TRUE(Run(plan, tensors).ok());
  EXPECT_TRUE(at::equal(tensors[1], (input + input).to(at::kBFloat16)));
}

TEST_F(NkiInterpreterTest, MatmulsAccumulateInFloat32InPsum) {
  // out = a^T b + a^T b, with a [2, 3] and b [2, 4] in SBUF.
  NkiKernelPlan plan;
  plan.allocations = {Hbm(0, kFloat, 6), Hbm(1, kFloat, 8), Hbm(2, kFloat, 12),
                      OnChip(NkiSpace::kSbuf, kFloat, 2, 3),
                      OnChip(NkiSpace::kSbuf, kFloat, 2, 4, 64),
                      OnChip(NkiSpace::kPsum, kFloat, 3, 4),
                      OnChip(NkiSpace::kSbuf, kFloat, 3, 4, 128)};
  NkiInstruction matmul{.opcode = NkiOpcode::kMatmul,
                        .operands = {Whole(5, 3, 4), Whole(3, 2, 3), Whole(4, 2, 4)},
                        .flags = {false}};
  NkiInstruction accumulate = matmul;
  accumulate.flags = {true};
  // PSUM is read back through SBUF: a DMA cannot read it.
  plan.instructions = {
      {.opcode = NkiOpcode::kDmaCopy, .operands = {Whole(3, 2, 3), Whole(0, 2, 3)}},
      {.opcode = NkiOpcode::kDmaCopy, .operands = {Whole(4, 2, 4), Whole(1, 2, 4)}},
      matmul,
      accumulate,
      {.opcode = NkiOpcode::kTensorCopy, .operands = {Whole(6, 3, 4), Whole(5, 3, 4)}},
      {.opcode = NkiOpcode::kDmaCopy, .operands = {Whole(2, 3, 4), Whole(6, 3, 4)}}};
  at::Tensor a = at::randn({2, 3});
  at::Tensor b = at::randn({2, 4});
  std::vector<at::Tensor> tensors = {a, b, at::zeros({3, 4})};
  ASSERT_TRUE(Run(plan, tensors).ok());
  EXPECT_TRUE(at::allclose(tensors[2], 2 * a.t().mm(b)));
}

TEST_F(NkiInterpreterTest, ActivationScalesAddsABiasPerPartitionAndReduces) {
  // y = exp(x * 0.5 + bias[p]); sums[p] = sum_f y[p, f].
  NkiKernelPlan plan;
  plan.allocations = {Hbm(0, kFloat, 8), Hbm(1, kFloat, 2), Hbm(2, kFloat, 8), Hbm(3, kFloat, 2),
                      OnChip(NkiSpace::kSbuf, kFloat, 2, 4), OnChip(NkiSpace::kSbuf, kFloat, 2, 1, 64),
                      OnChip(NkiSpace::kSbuf, kFloat, 2, 4, 128),
                      OnChip(NkiSpace::kSbuf, kFloat, 2, 1, 192)};
  plan.instructions = {
      {.opcode = NkiOpcode::kDmaCopy, .operands = {Whole(4, 2, 4), Whole(0, 2, 4)}},
      {.opcode = NkiOpcode::kDmaCopy, .operands = {Whole(5, 2, 1), Whole(1, 2, 1)}},
      {.opcode = NkiOpcode::kActivation,
       .operands = {Whole(6, 2, 4), Whole(4, 2, 4), Whole(5, 2, 1), std::nullopt, Whole(7, 2, 1)},
       .alu = {NkiAluOp::kAdd},
       .activation = NkiActivation::kExp,
       .scalars = {0.5}},
      {.opcode = NkiOpcode::kDmaCopy, .operands = {Whole(2, 2, 4), Whole(6, 2, 4)}},
      {.opcode = NkiOpcode::kDmaCopy, .operands = {Whole(3, 2, 1), Whole(7, 2, 1)}}};
  at::Tensor x = at::randn({2, 4});
  at::Tensor bias = at::randn({2, 1});
  std::vector<at::Tensor> tensors = {x, bias, at::zeros({2, 4}), at::zeros({2, 1})};
  ASSERT_TRUE(Run(plan, tensors).ok());
  const at::Tensor expected = (x * 0.5 + bias).exp();
  EXPECT_TRUE(at::allclose(tensors[2], expected));
  EXPECT_TRUE(at::allclose(tensors[3], expected.sum(1, true)));
}

TEST_F(NkiInterpreterTest, NewTilesHoldNanAndDisagreeingOperandsNameTheInstruction) {
  NkiKernelPlan plan;
  plan.name = std::string("k");  // GCC 12 under ASan: -Wrestrict on assign(const char*)
  plan.source_locations = {"k.py:7"};
  plan.allocations = {Hbm(0, kFloat, 8), OnChip(NkiSpace::kSbuf, kFloat, 2, 4)};
  plan.instructions = {
      {.opcode = NkiOpcode::kDmaCopy, .operands = {Whole(0, 2, 4), Whole(1, 2, 4)}}};
  std::vector<at::Tensor> tensors = {at::zeros({8})};
  ASSERT_TRUE(Run(plan, tensors).ok());
  EXPECT_TRUE(tensors[0].isnan().all().item<bool>());

  NkiAccess half{.allocation = 1, .offset = 0,
                 .dims = {{.stride = 4, .count = 2}, {.stride = 1, .count = 2}}};
  plan.instructions = {{.opcode = NkiOpcode::kTensorTensor,
                        .operands = {Whole(1, 2, 4), Whole(1, 2, 4), half},
                        .alu = {NkiAluOp::kAdd}}};
  const absl::Status status = Run(plan, tensors);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("NKI kernel 'k' instruction 0 (tensor_tensor) at k.py:7"));
}

TEST_F(NkiInterpreterTest, AValueAnIntegerTileCannotHoldFailsTheInstructionNotTheProcess) {
  // ATen throws std::runtime_error, not c10::Error, for this conversion.
  NkiKernelPlan plan;
  plan.allocations = {OnChip(NkiSpace::kSbuf, /*int32=*/3, 2, 4)};
  plan.instructions = {
      {.opcode = NkiOpcode::kMemset, .operands = {Whole(0, 2, 4)}, .scalars = {1e300}}};
  std::vector<at::Tensor> tensors;
  const absl::Status status = Run(plan, tensors);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("instruction 0 (memset)"));
}

TEST_F(NkiInterpreterTest, AFloatImmediatePastTheTileRangeRoundsToInfinityAsTheEnginesDo) {
  NkiKernelPlan plan;
  plan.allocations = {OnChip(NkiSpace::kSbuf, /*float16=*/5, 2, 4), Hbm(0, /*float16=*/5, 8)};
  plan.instructions = {
      {.opcode = NkiOpcode::kMemset, .operands = {Whole(0, 2, 4)}, .scalars = {1e300}},
      {.opcode = NkiOpcode::kDmaCopy, .operands = {Whole(1, 2, 4), Whole(0, 2, 4)}}};
  std::vector<at::Tensor> tensors = {at::zeros({8}, at::kHalf)};
  ASSERT_TRUE(Run(plan, tensors).ok());
  EXPECT_TRUE(at::all(at::isinf(tensors[0])).item<bool>());
}

TEST_F(NkiInterpreterTest, RefusesABufferSmallerThanItsAllocation) {
  NkiKernelPlan plan;
  plan.allocations = {Hbm(0, kFloat, 8)};
  std::vector<at::Tensor> tensors = {at::zeros({4})};
  EXPECT_EQ(Run(plan, tensors).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace neuron::rtd::nki

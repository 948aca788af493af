// What the daemon accepts as an NKI kernel: CheckNkiKernel's bounds (every
// access inside its allocation, tiles inside SBUF and PSUM, instructions
// well formed) and the decoder's reading of the wire form.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "daemon/exec/nki_kernel_decoder.h"
#include "neuron/rtd/nki_kernel.h"

namespace neuron::rtd {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// x and out: 128 x 4 floats in HBM; a [128, 4] tile in SBUF; a [128, 4]
// float32 tile in PSUM.
NkiKernelPlan TwoTensorsAndTiles() {
  NkiKernelPlan plan;
  plan.name = std::string("k");  // GCC 12 under ASan: -Wrestrict on assign(const char*)
  plan.allocations = {
      {.space = NkiSpace::kHbm, .dtype = 6, .name = "x", .address_index = 0, .elements = 512},
      {.space = NkiSpace::kHbm, .dtype = 6, .name = "out", .address_index = 1, .elements = 512},
      {.space = NkiSpace::kSbuf, .dtype = 6, .name = "tile", .partitions = 128, .free_elements = 4},
      {.space = NkiSpace::kPsum, .dtype = 6, .name = "acc", .partitions = 128, .free_elements = 4},
  };
  plan.source_locations = {"k.py:3"};
  return plan;
}

NkiAccess Tile(uint32_t allocation, int64_t columns = 4, int64_t offset = 0) {
  return NkiAccess{.allocation = allocation, .offset = offset,
                   .dims = {{.stride = 4, .count = 128}, {.stride = 1, .count = columns}}};
}

NkiInstruction Copy(NkiAccess dst, NkiAccess src) {
  return NkiInstruction{.opcode = NkiOpcode::kDmaCopy, .operands = {dst, src}};
}

TEST(NkiKernelCheckTest, AcceptsAWellFormedKernel) {
  NkiKernelPlan plan = TwoTensorsAndTiles();
  plan.instructions = {Copy(Tile(2), Tile(0)), Copy(Tile(1), Tile(2))};
  EXPECT_THAT(CheckNkiKernel(plan), IsEmpty());
}

TEST(NkiKernelCheckTest, RefusesAccessesOutsideTheirAllocation) {
  NkiKernelPlan plan = TwoTensorsAndTiles();
  plan.instructions = {Copy(Tile(2, 5), Tile(0))};
  EXPECT_THAT(CheckNkiKernel(plan),
              HasSubstr("instruction 0 (dma_copy) at k.py:3: operand 0: access outside tile"));
  plan.instructions = {Copy(Tile(2), Tile(0, 4, 1))};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("access outside HBM tensor 'x'"));
  // Counts and strides whose products overflow 64 bits.
  NkiAccess huge{.allocation = 0, .offset = 0,
                 .dims = {{.stride = int64_t{1} << 40, .count = int64_t{1} << 24},
                          {.stride = int64_t{1} << 40, .count = int64_t{1} << 24}}};
  plan.instructions = {Copy(Tile(2), huge)};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("access outside HBM tensor"));
  huge.dims[0].count = std::numeric_limits<int64_t>::max();
  plan.instructions = {Copy(Tile(2), huge)};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("dimension 0 of count"));
  // A dimension either walks whole partitions or stays inside one.
  NkiAccess strided = Tile(2);
  strided.dims[0].stride = 2;
  plan.instructions = {Copy(strided, Tile(0))};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("access outside tile"));
  plan.instructions = {Copy(Tile(9), Tile(0))};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("allocation 9 does not exist"));
}

TEST(NkiKernelCheckTest, ADmaWalksPartitionsInAnyDimensionAnEngineInTheFirstOnly) {
  NkiKernelPlan plan = TwoTensorsAndTiles();
  // One partition repeated (a partition broadcast) and partitions walked in
  // the second dimension: a DMA reads both.
  NkiAccess repeated = Tile(2);
  repeated.dims[0].stride = 0;
  NkiAccess transposed{.allocation = 2, .offset = 0,
                       .dims = {{.stride = 1, .count = 4}, {.stride = 4, .count = 128}}};
  plan.instructions = {Copy(Tile(2), repeated), Copy(transposed, Tile(2))};
  EXPECT_THAT(CheckNkiKernel(plan), IsEmpty());
  // An engine reads one partition per lane, in its first dimension.
  plan.instructions = {NkiInstruction{.opcode = NkiOpcode::kTensorCopy,
                                      .operands = {Tile(3), repeated}}};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("an engine walks the partitions"));
  plan.instructions = {NkiInstruction{.opcode = NkiOpcode::kTensorCopy,
                                      .operands = {transposed, Tile(3)}}};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("an engine walks the partitions"));
}

TEST(NkiKernelCheckTest, RefusesTilesOutsideTheCoresMemories) {
  NkiKernelPlan plan = TwoTensorsAndTiles();
  plan.allocations[2].byte_offset = plan.target.sbuf_partition_bytes - 8;
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("do not fit a partition"));
  plan = TwoTensorsAndTiles();
  plan.allocations[3].partition_start = 64;
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("outside the core's 128"));
  plan = TwoTensorsAndTiles();
  plan.allocations[2].dtype = 99;
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("dtype 99 is not supported"));
  plan = TwoTensorsAndTiles();
  plan.target.sbuf_partition_bytes = uint64_t{1} << 40;
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("outside what a NeuronCore has"));
  plan = TwoTensorsAndTiles();
  plan.allocations[0].address_index = 1u << 30;
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("address index"));
}

TEST(NkiKernelCheckTest, RefusesMalformedInstructions) {
  NkiKernelPlan plan = TwoTensorsAndTiles();
  plan.instructions = {NkiInstruction{.opcode = NkiOpcode::kTensorTensor,
                                      .operands = {Tile(2), Tile(2)},
                                      .alu = {NkiAluOp::kAdd}}};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("2 operands (takes 3)"));
  plan.instructions = {NkiInstruction{.opcode = NkiOpcode::kTensorTensor,
                                      .operands = {Tile(2), Tile(2), Tile(0)},
                                      .alu = {NkiAluOp::kAdd}}};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("compute engines read SBUF or PSUM"));
  plan.instructions = {NkiInstruction{.opcode = NkiOpcode::kTensorTensor,
                                      .operands = {Tile(2), Tile(2), Tile(2)},
                                      .alu = {static_cast<NkiAluOp>(77)}}};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("unknown operator"));
  plan.instructions = {NkiInstruction{.opcode = NkiOpcode::kMatmul,
                                      .operands = {Tile(2), Tile(2), Tile(2)},
                                      .flags = {false}}};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("float32 tile in PSUM"));
  plan.instructions = {Copy(Tile(3), Tile(2))};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("a DMA cannot read or write PSUM"));
  plan.instructions = {NkiInstruction{.opcode = static_cast<NkiOpcode>(-3)}};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("unknown opcode"));
  NkiInstruction missing = Copy(Tile(2), Tile(0));
  missing.operands[1].reset();
  plan.instructions = {missing};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("operand 1 is missing"));
  NkiInstruction reduce{.opcode = NkiOpcode::kTensorReduce,
                        .operands = {Tile(2, 1), Tile(2)},
                        .alu = {NkiAluOp::kAdd},
                        .flags = {false, true},
                        .axes = {0}};
  plan.instructions = {reduce};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("axis 0 is not a free dimension"));
  NkiInstruction misplaced = Copy(Tile(2), Tile(0));
  misplaced.source = 5;
  plan.instructions = {misplaced};
  EXPECT_THAT(CheckNkiKernel(plan), HasSubstr("source location 5 does not exist"));
}

TEST(NkiKernelDecoderTest, DecodesTheWireFormAndRecordsLaunchTensors) {
  v1::NkiKernel kernel;
  kernel.set_name("copy");
  kernel.mutable_target()->set_partitions(128);
  kernel.mutable_target()->set_sbuf_partition_bytes(212'984);
  kernel.mutable_target()->set_psum_partition_bytes(16'384);
  for (uint32_t i = 0; i < 2; ++i) {
    v1::NkiAllocation* hbm = kernel.add_allocations();
    hbm->set_dtype(v1::SCALAR_TYPE_FLOAT32);
    hbm->set_address_index(i);
    hbm->set_elements(512);
  }
  v1::NkiInstruction* copy = kernel.add_instructions();
  copy->set_opcode("dma_copy");
  copy->set_activation("copy");
  for (int i = 0; i < 2; ++i) {
    v1::NkiAccess* access = copy->add_operands()->mutable_access();
    access->set_allocation(i);
    access->add_strides(1);
    access->add_counts(512);
  }
  absl::StatusOr<exec::Executable> decoded = exec::DecodeNkiKernel(kernel);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->address_count, 2u);
  ASSERT_EQ(decoded->launch_tensors.size(), 2u);
  EXPECT_EQ(decoded->launch_tensors[1].sizes, std::vector<int64_t>{512});
  EXPECT_EQ(decoded->description, "NKI kernel 'copy'");

  copy->set_opcode("launch_missiles");
  EXPECT_THAT(exec::DecodeNkiKernel(kernel).status().message(),
              HasSubstr("unknown opcode 'launch_missiles'"));
  copy->set_opcode("dma_copy");
  copy->mutable_operands(0)->mutable_access()->add_strides(1);
  EXPECT_THAT(exec::DecodeNkiKernel(kernel).status().message(),
              HasSubstr("an access's strides and counts differ in number"));
  copy->mutable_operands(0)->mutable_access()->add_counts(2);
  EXPECT_THAT(exec::DecodeNkiKernel(kernel).status().message(),
              HasSubstr("access outside HBM tensor"));
}

}  // namespace
}  // namespace neuron::rtd

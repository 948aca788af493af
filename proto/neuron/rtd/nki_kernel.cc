#include "neuron/rtd/nki_kernel.h"

#include <algorithm>
#include <array>
#include <string>

#include "neuron/rtd/abi/command_ring.h"
#include "neuron/rtd/eager_op.h"

namespace neuron::rtd {
namespace {

constexpr std::array<std::string_view, static_cast<size_t>(NkiAluOp::kCount)> kAluOpNames = {
    "add",     "subtract",   "multiply", "divide",        "maximum",
    "minimum", "power",      "equal",    "not_equal",     "greater",
    "greater_equal", "less", "less_equal", "abs_max",     "abs_min",
    "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
    "logical_and", "logical_or", "logical_xor", "mod", "fmod",
    "bypass", "invert", "abs", "square", "relu", "rsqrt", "reciprocal", "average"};

constexpr std::array<std::string_view, static_cast<size_t>(NkiActivation::kCount)>
    kActivationNames = {"copy",    "exp",     "log",  "sqrt", "rsqrt",   "reciprocal",
                        "sin",     "cos",     "tanh", "sigmoid", "relu", "gelu",
                        "gelu_apprx_tanh", "silu", "square", "abs", "sign", "erf",
                        "softplus", "arctan", "negative", "gelu_dx", "gelu_apprx_sigmoid",
                        "gelu_apprx_sigmoid_dx", "silu_dx", "mish", "erf_dx", "tan", "ceil",
                        "floor", "trunc"};

constexpr std::array<std::string_view, static_cast<size_t>(NkiOpcode::kCount)> kOpcodeNames = {
    "dma_copy",  "tensor_copy", "memset",       "tensor_tensor", "tensor_scalar",
    "activation", "nc_matmul",  "nc_transpose", "tensor_reduce", "iota",
    "tensor_copy_predicated", "dma_transpose", "tensor_tensor_scan", "tensor_scalar_cumulative",
    "tensor_partition_reduce", "scalar_tensor_tensor", "tensor_scalar_reduce", "affine_select",
    "range_select", "select_reduce", "bn_stats", "bn_aggr", "max8", "nc_find_index8",
    "nc_match_replace8", "nc_stream_shuffle", "local_gather", "nc_n_gather", "sequence_bounds",
    "random", "dropout", "set_rng_seed", "exponential", "nonzero_with_count", "dma_compute"};

template <typename Enum, size_t N>
std::optional<Enum> Named(const std::array<std::string_view, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

template <typename Enum, size_t N>
std::string_view NameOf(const std::array<std::string_view, N>& names, Enum value) {
  const auto index = static_cast<size_t>(value);
  return index < N ? names[index] : std::string_view("?");
}

}  // namespace

uint32_t NkiElementBytes(int32_t dtype) {
  switch (dtype) {
    case kNkiFloat8E4m3:
    case 44:  // float8_e8m0fnu
      return 1;
    default:
      return ElementBytes(dtype);
  }
}

std::optional<NkiAluOp> NkiAluOpNamed(std::string_view name) {
  return Named<NkiAluOp>(kAluOpNames, name);
}
std::optional<NkiActivation> NkiActivationNamed(std::string_view name) {
  return Named<NkiActivation>(kActivationNames, name);
}
std::optional<NkiOpcode> NkiOpcodeNamed(std::string_view name) {
  return Named<NkiOpcode>(kOpcodeNames, name);
}
std::string_view NkiAluOpName(NkiAluOp op) { return NameOf(kAluOpNames, op); }
std::string_view NkiActivationName(NkiActivation function) {
  return NameOf(kActivationNames, function);
}
std::string_view NkiOpcodeName(NkiOpcode opcode) { return NameOf(kOpcodeNames, opcode); }

namespace {

struct OpcodeShape {
  size_t operands;
  size_t required;
  size_t alu;
  size_t scalars;
  size_t max_flags;
  size_t max_axes;
};


OpcodeShape ShapeOf(NkiOpcode opcode) {
  switch (opcode) {
    case NkiOpcode::kDmaCopy:
    case NkiOpcode::kTensorCopy:
    case NkiOpcode::kTranspose:
    case NkiOpcode::kDmaTranspose:
    case NkiOpcode::kBnStats:
    case NkiOpcode::kBnAggr:
    case NkiOpcode::kMax8:
    case NkiOpcode::kSequenceBounds:
      return {2, 2, 0, 0, 0, 0};
    case NkiOpcode::kMemset:
      return {1, 1, 0, 1, 0, 0};
    case NkiOpcode::kTensorTensor:
      return {3, 3, 1, 0, 0, 0};
    case NkiOpcode::kTensorScalar:
      return {4, 2, 2, 2, 2, 0};
    case NkiOpcode::kActivation:
      return {5, 2, 1, 1, 3, 0};
    case NkiOpcode::kMatmul:
      return {3, 3, 0, 0, 3, 0};
    case NkiOpcode::kTensorReduce:
      return {2, 2, 1, 0, 2, kNkiMaxAccessDims - 1};
    case NkiOpcode::kIota:
      return {1, 1, 0, 2, 0, kNkiMaxAccessDims - 1};
    case NkiOpcode::kTensorCopyPredicated:
    case NkiOpcode::kFindIndex8:
    case NkiOpcode::kNGather:
      return {3, 3, 0, 0, 0, 0};
    case NkiOpcode::kTensorTensorScan:
      return {4, 3, 2, 1, 2, 0};
    case NkiOpcode::kTensorScalarCumulative:
      return {4, 2, 2, 2, 3, 0};
    case NkiOpcode::kTensorPartitionReduce:
      return {2, 2, 1, 0, 0, 0};
    case NkiOpcode::kScalarTensorTensor:
      return {4, 2, 2, 1, 2, 0};
    case NkiOpcode::kTensorScalarReduce:
      return {5, 2, 2, 2, 5, 0};
    case NkiOpcode::kAffineSelect:
      return {2, 2, 1, 3, 0, kNkiMaxAccessDims - 1};
    case NkiOpcode::kRangeSelect:
      return {5, 4, 2, 2, 2, 0};
    case NkiOpcode::kSelectReduce:
      return {5, 3, 0, 1, 3, 0};
    case NkiOpcode::kMatchReplace8:
      return {4, 3, 0, 1, 0, 0};
    case NkiOpcode::kStreamShuffle:
      return {2, 2, 0, 0, 0, 32};
    case NkiOpcode::kLocalGather:
      return {3, 3, 0, 2, 0, 0};
    case NkiOpcode::kRandom:
      return {1, 1, 0, 2, 1, 0};
    case NkiOpcode::kDropout:
      return {3, 2, 0, 1, 0, 0};
    case NkiOpcode::kSetRandomSeed:
      return {1, 1, 0, 0, 0, 0};
    case NkiOpcode::kExponential:
      return {5, 2, 0, 2, 3, 0};
    case NkiOpcode::kNonzeroWithCount:
      return {2, 2, 0, 2, 0, 0};
    case NkiOpcode::kDmaCompute:
      return {kNkiMaxOperands, 2, 1, 0, 0, 0};
    case NkiOpcode::kCount:
      break;
  }
  return {};
}

std::string Describe(const NkiKernelPlan& plan, size_t index) {
  const NkiInstruction& instruction = plan.instructions[index];
  std::string where = "instruction " + std::to_string(index) + " (" +
                      std::string(NkiOpcodeName(instruction.opcode)) + ")";
  if (instruction.source < plan.source_locations.size()) {
    where += " at " + plan.source_locations[instruction.source];
  }
  return where;
}

std::string CheckAllocation(const NkiKernelPlan& plan, const NkiAllocation& allocation) {
  const uint32_t element = NkiElementBytes(allocation.dtype);
  if (element == 0) return "dtype " + std::to_string(allocation.dtype) + " is not supported";
  if (allocation.name.size() > kNkiMaxStringBytes) return "name too long";
  switch (allocation.space) {
    case NkiSpace::kHbm: {
      if (allocation.shape.size() > 8) return "a shape of more than 8 dimensions";
      int64_t shaped = 1;
      for (int64_t size : allocation.shape) {
        if (size < 0 || size > kNkiMaxHbmElements) return "a size of " + std::to_string(size);
        shaped = size == 0 ? 0 : (shaped > kNkiMaxHbmElements / size ? kNkiMaxHbmElements + 1
                                                                      : shaped * size);
      }
      if (!allocation.shape.empty() && shaped > allocation.elements) {
        return "a shape of more than its " + std::to_string(allocation.elements) + " elements";
      }
      if (allocation.address_index >= NEURON_RTD_MAX_LAUNCH_ARGS) {
        return "address index " + std::to_string(allocation.address_index) + " (at most " +
               std::to_string(NEURON_RTD_MAX_LAUNCH_ARGS - 1) + ")";
      }
      if (allocation.elements < 0 || allocation.elements > kNkiMaxHbmElements) {
        return std::to_string(allocation.elements) + " elements";
      }
      return "";
    }
    case NkiSpace::kSbuf:
    case NkiSpace::kPsum: {
      const uint64_t partition_bytes = allocation.space == NkiSpace::kSbuf
                                           ? plan.target.sbuf_partition_bytes
                                           : plan.target.psum_partition_bytes;
      if (allocation.partitions == 0 || allocation.partitions > plan.target.partitions ||
          allocation.partition_start > plan.target.partitions - allocation.partitions) {
        return "partitions " + std::to_string(allocation.partition_start) + "+" +
               std::to_string(allocation.partitions) + " outside the core's " +
               std::to_string(plan.target.partitions);
      }
      if (allocation.free_elements <= 0 || allocation.byte_offset % element != 0 ||
          allocation.byte_offset > partition_bytes ||
          static_cast<uint64_t>(allocation.free_elements) >
              (partition_bytes - allocation.byte_offset) / element) {
        return std::to_string(allocation.free_elements) + " elements at byte " +
               std::to_string(allocation.byte_offset) + " do not fit a partition of " +
               std::to_string(partition_bytes) + " bytes";
      }
      return "";
    }
  }
  return "unknown memory space";
}

// Lowest and highest element offset of `dims[first..]` from 0 (exact: the
// products of client-sent counts and strides need more than 64 bits).
using Wide = __int128;
std::string ReachOf(const std::vector<NkiDim>& dims, size_t first, Wide& low, Wide& high) {
  low = high = 0;
  for (size_t k = first; k < dims.size(); ++k) {
    const NkiDim& dim = dims[k];
    if (dim.count < 1 || dim.count > kNkiMaxCount || dim.stride < -kNkiMaxHbmElements ||
        dim.stride > kNkiMaxHbmElements) {
      return "dimension " + std::to_string(k) + " of count " + std::to_string(dim.count) +
             " and stride " + std::to_string(dim.stride);
    }
    const Wide span = Wide{dim.count - 1} * dim.stride;
    (span < 0 ? low : high) += span;
  }
  return "";
}

// Whether the DMA queues move `opcode`'s operands (any dimension may walk
// a tile's partitions) rather than an engine (partitions first, one per
// lane).
bool MovedByDma(NkiOpcode opcode) {
  return opcode == NkiOpcode::kDmaCopy || opcode == NkiOpcode::kDmaTranspose ||
         opcode == NkiOpcode::kDmaCompute;
}

std::string CheckAccess(const NkiKernelPlan& plan, const NkiAccess& access, bool by_dma);

bool IsIntegerDtype(int32_t dtype) {
  switch (dtype) {
    case 0:   // uint8
    case 1:   // int8
    case 2:   // int16
    case 3:   // int32
    case 27:  // uint16
    case 28:  // uint32
      return true;
    default:
      return false;
  }
}

// An indirect access: an HBM operand of a DMA whose index is an integer
// tile with one value per position of `dim` (or one value), and a stride
// that keeps index times stride inside 64 bits (the interpreter checks each
// offset against the tensor when it runs).
std::string CheckIndirect(const NkiKernelPlan& plan, const NkiAccess& access, bool by_dma) {
  const NkiIndirect& indirect = *access.indirect;
  if (!by_dma || plan.allocations[access.allocation].space != NkiSpace::kHbm) {
    return "indirect offsets are for HBM operands of DMAs";
  }
  const NkiAccess index{.allocation = indirect.allocation, .offset = indirect.offset,
                        .dims = indirect.dims, .indirect = std::nullopt};
  if (std::string bad = CheckAccess(plan, index, /*by_dma=*/false); !bad.empty()) {
    return "its index: " + bad;
  }
  const NkiAllocation& tile = plan.allocations[indirect.allocation];
  if (tile.space == NkiSpace::kHbm || !IsIntegerDtype(tile.dtype)) {
    return "its index is a tile of integers in SBUF or PSUM";
  }
  int64_t values = 1;
  for (const NkiDim& dim : indirect.dims) values *= dim.count;
  const int64_t wanted =
      indirect.dim < 0 ? 1
      : indirect.dim < static_cast<int32_t>(access.dims.size()) ? access.dims[indirect.dim].count
                                                                 : -1;
  if (indirect.dim < -1 || wanted < 0 || values != wanted) {
    return "its index has " + std::to_string(values) + " values for dimension " +
           std::to_string(indirect.dim);
  }
  if (indirect.stride <= 0 || indirect.stride > kNkiMaxHbmElements) {
    return "index stride " + std::to_string(indirect.stride);
  }
  return "";
}

std::string CheckAccess(const NkiKernelPlan& plan, const NkiAccess& access, bool by_dma) {
  if (access.allocation >= plan.allocations.size()) {
    return "allocation " + std::to_string(access.allocation) + " does not exist";
  }
  const NkiAllocation& allocation = plan.allocations[access.allocation];
  if (access.dims.empty() || access.dims.size() > kNkiMaxAccessDims) {
    return std::to_string(access.dims.size()) + " dimensions (1 to " +
           std::to_string(kNkiMaxAccessDims) + ")";
  }
  if (access.offset < 0 || access.offset > kNkiMaxHbmElements) {
    return "offset " + std::to_string(access.offset);
  }
  if (access.indirect) {
    if (std::string bad = CheckIndirect(plan, access, by_dma); !bad.empty()) return bad;
  }
  Wide low = 0;
  Wide high = 0;
  if (std::string bad = ReachOf(access.dims, 0, low, high); !bad.empty()) return bad;
  if (allocation.space == NkiSpace::kHbm) {
    if (access.offset + low < 0 || access.offset + high >= allocation.elements) {
      return "access outside HBM tensor '" + allocation.name + "' of " +
             std::to_string(allocation.elements) + " elements";
    }
    return "";
  }
  // On chip: each dimension walks whole partitions or stays inside one.
  const int64_t free = allocation.free_elements;
  Wide partition_low = 0;
  Wide partition_high = 0;
  Wide element_low = 0;
  Wide element_high = 0;
  for (size_t k = 0; k < access.dims.size(); ++k) {
    const NkiDim& dim = access.dims[k];
    if (dim.count == 1) continue;
    const bool walks_partitions = dim.stride % free == 0;
    if (!by_dma && (k == 0 ? dim.stride != free : walks_partitions && dim.stride != 0)) {
      return "an engine walks the partitions of tile '" + allocation.name +
             "' in its first dimension, one partition at a time, and stays inside a partition "
             "in the others";
    }
    const Wide span = Wide{dim.count - 1} * (walks_partitions ? dim.stride / free : dim.stride);
    Wide& grow_low = walks_partitions ? partition_low : element_low;
    Wide& grow_high = walks_partitions ? partition_high : element_high;
    (span < 0 ? grow_low : grow_high) += span;
  }
  const int64_t first_partition = access.offset / free;
  const int64_t first_element = access.offset % free;
  if (first_partition + partition_low < 0 ||
      first_partition + partition_high >= allocation.partitions || first_element + element_low < 0 ||
      first_element + element_high >= free) {
    return "access outside tile '" + allocation.name + "' [" +
           std::to_string(allocation.partitions) + ", " + std::to_string(free) + "]";
  }
  return "";
}

NkiSpace SpaceOf(const NkiKernelPlan& plan, const std::optional<NkiAccess>& operand) {
  return plan.allocations[operand->allocation].space;
}

std::string CheckSpaces(const NkiKernelPlan& plan, const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  switch (instruction.opcode) {
    case NkiOpcode::kDmaCopy:
    case NkiOpcode::kDmaTranspose:
    case NkiOpcode::kDmaCompute:
      for (const std::optional<NkiAccess>& operand : operands) {
        if (operand && SpaceOf(plan, operand) == NkiSpace::kPsum) {
          return "a DMA cannot read or write PSUM";
        }
      }
      return "";
    case NkiOpcode::kMatmul: {
      const bool transpose = instruction.flags.size() > 1 && instruction.flags[1];
      if (SpaceOf(plan, operands[0]) != NkiSpace::kPsum ||
          (!transpose && plan.allocations[operands[0]->allocation].dtype != 6)) {
        return "the destination must be a float32 tile in PSUM";
      }
      if (SpaceOf(plan, operands[1]) != NkiSpace::kSbuf ||
          SpaceOf(plan, operands[2]) != NkiSpace::kSbuf) {
        return "stationary and moving must be in SBUF";
      }
      return "";
    }
    default:
      for (size_t i = 0; i < operands.size(); ++i) {
        if (operands[i] && SpaceOf(plan, operands[i]) == NkiSpace::kHbm) {
          return "operand " + std::to_string(i) + " is in HBM; compute engines read SBUF or PSUM";
        }
      }
      return "";
  }
}

std::string CheckInstruction(const NkiKernelPlan& plan, const NkiInstruction& instruction) {
  if (instruction.opcode < NkiOpcode::kDmaCopy || instruction.opcode >= NkiOpcode::kCount) {
    return "unknown opcode";
  }
  const OpcodeShape shape = ShapeOf(instruction.opcode);
  const bool variadic = instruction.opcode == NkiOpcode::kDmaCompute;
  if (variadic ? instruction.operands.size() < shape.required ||
                     instruction.operands.size() > shape.operands
               : instruction.operands.size() != shape.operands) {
    return std::to_string(instruction.operands.size()) + " operands (takes " +
           std::to_string(shape.operands) + ")";
  }
  if (instruction.opcode == NkiOpcode::kScalarTensorTensor && !instruction.operands[3]) {
    return "operand 3 is missing";
  }
  for (size_t i = 0; i < instruction.operands.size(); ++i) {
    if (!instruction.operands[i]) {
      if (i < shape.required) return "operand " + std::to_string(i) + " is missing";
      continue;
    }
    if (std::string bad =
            CheckAccess(plan, *instruction.operands[i], MovedByDma(instruction.opcode));
        !bad.empty()) {
      return "operand " + std::to_string(i) + ": " + bad;
    }
  }
  if (instruction.alu.size() != shape.alu || instruction.scalars.size() != shape.scalars ||
      instruction.flags.size() > shape.max_flags || instruction.axes.size() > shape.max_axes) {
    return "wrong count of operators, scalars, flags or axes";
  }
  for (size_t i = 0; i < instruction.alu.size(); ++i) {
    const NkiAluOp op = instruction.alu[i];
    const bool optional = (instruction.opcode == NkiOpcode::kTensorScalar && i == 1) ||
                          instruction.opcode == NkiOpcode::kActivation;
    if (op < NkiAluOp::kAdd || op > NkiAluOp::kCount || (op == NkiAluOp::kCount && !optional)) {
      return "unknown operator";
    }
  }
  if (instruction.activation < NkiActivation::kCopy ||
      instruction.activation >= NkiActivation::kCount) {
    return "unknown activation function";
  }
  if (instruction.opcode == NkiOpcode::kTensorReduce) {
    if (instruction.axes.empty()) return "no axes to reduce";
    for (int64_t axis : instruction.axes) {
      if (axis < 1 || axis >= static_cast<int64_t>(instruction.operands[1]->dims.size())) {
        return "axis " + std::to_string(axis) + " is not a free dimension of the data";
      }
    }
  }
  if (plan.source_locations.empty() ? instruction.source != 0
                                    : instruction.source >= plan.source_locations.size()) {
    return "source location " + std::to_string(instruction.source) + " does not exist";
  }
  return CheckSpaces(plan, instruction);
}

}  // namespace

bool NkiWritesOperand(const NkiInstruction& instruction, size_t i) {
  if (i == 0) return true;
  switch (instruction.opcode) {
    case NkiOpcode::kActivation:
      return i == 4;
    case NkiOpcode::kTensorScalarReduce:
    case NkiOpcode::kExponential:
      return i == 3;
    case NkiOpcode::kRangeSelect:
    case NkiOpcode::kSelectReduce:
      return i == 4;
    case NkiOpcode::kMatchReplace8:
      return i == 3;
    default:
      return false;
  }
}

std::string CheckNkiKernel(const NkiKernelPlan& plan) {
  const NkiTarget& target = plan.target;
  if (target.partitions == 0 || target.partitions > kNkiMaxPartitions ||
      target.sbuf_partition_bytes % 8 != 0 || target.sbuf_partition_bytes == 0 ||
      target.sbuf_partition_bytes > kNkiMaxSbufPartitionBytes ||
      target.psum_partition_bytes % 8 != 0 || target.psum_partition_bytes == 0 ||
      target.psum_partition_bytes > kNkiMaxPsumPartitionBytes) {
    return "target of " + std::to_string(target.partitions) + " partitions, " +
           std::to_string(target.sbuf_partition_bytes) + " SBUF and " +
           std::to_string(target.psum_partition_bytes) +
           " PSUM bytes per partition is outside what a NeuronCore has";
  }
  if (plan.name.size() > kNkiMaxStringBytes) return "name too long";
  if (plan.allocations.size() > kNkiMaxAllocations ||
      plan.instructions.size() > kNkiMaxInstructions ||
      plan.source_locations.size() > kNkiMaxInstructions) {
    return std::to_string(plan.allocations.size()) + " allocations and " +
           std::to_string(plan.instructions.size()) + " instructions (at most " +
           std::to_string(kNkiMaxAllocations) + " and " + std::to_string(kNkiMaxInstructions) +
           ")";
  }
  for (const std::string& location : plan.source_locations) {
    if (location.size() > kNkiMaxStringBytes) return "source location too long";
  }
  for (size_t i = 0; i < plan.allocations.size(); ++i) {
    if (std::string bad = CheckAllocation(plan, plan.allocations[i]); !bad.empty()) {
      return "allocation " + std::to_string(i) + " ('" +
             plan.allocations[i].name.substr(0, kNkiMaxStringBytes) + "'): " + bad;
    }
  }
  for (size_t i = 0; i < plan.instructions.size(); ++i) {
    if (std::string bad = CheckInstruction(plan, plan.instructions[i]); !bad.empty()) {
      return Describe(plan, i) + ": " + bad;
    }
  }
  return "";
}

}  // namespace neuron::rtd

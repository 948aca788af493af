// An NKI kernel (the `nki` package's @nki.jit), as plain data: the flat
// instruction list its trace produced, every buffer placed in its memory
// space. What the client describes, the daemon checks and the interpreter
// (daemon/hal/sim/nki/) runs. The wire form is neuron.rtd.v1.NkiKernel
// (v1/executable.proto); libneuronrt encodes this struct into it,
// daemon/exec decodes and checks it back. No Protobuf, no PyTorch.
//
// Addressing. A kernel reads and writes allocations: HBM tensors at LAUNCH
// addresses (its arguments and outputs, each a flat run of `elements`), and
// tiles of the core's SBUF or PSUM (`partitions` rows of `free_elements`,
// placed at `partition_start` and `byte_offset` within every partition).
// An access is a strided view of one allocation in its own element
// coordinates (a tile's element (p, f) is p * free_elements + f). On chip,
// each dimension either walks partitions (a stride that is a multiple of
// free_elements, 0 included: one partition repeated) or stays within one;
// an engine's operands walk partitions in their first dimension only (one
// partition per lane), a DMA's in any.
//
// Dtypes are c10::ScalarType numbers, and kNkiFloat8E4m3 for NKI's
// float8_e4m3 (1 sign, 4 exponent, 3 mantissa bits, bias 7, with
// infinities: ml_dtypes.float8_e4m3), which torch has not; its elements are
// bytes in memory.
#ifndef NEURON_RTD_NKI_KERNEL_H_
#define NEURON_RTD_NKI_KERNEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace neuron::rtd {

enum class NkiSpace : int32_t { kHbm = 0, kSbuf = 1, kPsum = 2 };

// The dtype number of NKI's float8_e4m3 (past c10::ScalarType's).
inline constexpr int32_t kNkiFloat8E4m3 = 100;

// Bytes of one element of `dtype` (a c10::ScalarType number or
// kNkiFloat8E4m3); 0 for dtypes a kernel cannot hold.
uint32_t NkiElementBytes(int32_t dtype);

struct NkiAllocation {
  NkiSpace space = NkiSpace::kHbm;
  // A c10::ScalarType number.
  int32_t dtype = 6;
  // Shown in errors ("tile 'acc'").
  std::string name;
  // HBM: LAUNCH address `address_index`, `elements` long.
  uint32_t address_index = 0;
  int64_t elements = 0;
  // SBUF and PSUM.
  uint32_t partitions = 0;
  int64_t free_elements = 0;
  uint32_t partition_start = 0;
  uint64_t byte_offset = 0;
  // HBM: the tensor's sizes as traced (at most `elements` elements); what
  // a graph's kNkiCallNode gives the allocations it makes. May be empty.
  std::vector<int64_t> shape;
};

struct NkiDim {
  int64_t stride = 0;
  int64_t count = 0;
  friend bool operator==(const NkiDim&, const NkiDim&) = default;
};

// Offsets a DMA reads from a tile when it runs (indirect addressing): the
// integers at `index` (an access of an on-chip tile, no indirection of its
// own) times `stride` elements, added along dimension `dim` of the access
// (element i_dim of it takes index value i_dim) or, with dim -1, to every
// element (the index's one value).
struct NkiIndirect {
  uint32_t allocation = 0;
  int64_t offset = 0;
  std::vector<NkiDim> dims;
  int32_t dim = -1;
  int64_t stride = 0;
};

// A strided view of allocation `allocation`: element `offset` plus
// sum(i_k * dims[k].stride) for 0 <= i_k < dims[k].count, plus the
// indirect offsets, if any (HBM operands of DMAs only).
struct NkiAccess {
  uint32_t allocation = 0;
  int64_t offset = 0;
  std::vector<NkiDim> dims;
  std::optional<NkiIndirect> indirect;
};

// Arithmetic of the Vector, Scalar and GpSimd engines (nki.language's ALU
// operators): inputs converted to float32, the result rounded to the
// destination's dtype.
enum class NkiAluOp : int32_t {
  kAdd = 0,
  kSubtract,
  kMultiply,
  kDivide,
  kMaximum,
  kMinimum,
  kPower,
  kEqual,
  kNotEqual,
  kGreater,
  kGreaterEqual,
  kLess,
  kLessEqual,
  kAbsMax,
  kAbsMin,
  // Bit operations on integers (the operands' bits, as int32).
  kBitwiseAnd,
  kBitwiseOr,
  kBitwiseXor,
  kLeftShift,
  kRightShift,  // logical
  kLogicalAnd,
  kLogicalOr,
  kLogicalXor,
  kMod,   // Python's %: the sign of the divisor
  kFmod,  // C's fmod: the sign of the dividend
  // Unary (the second operand is ignored): the data as it is, ~data (bits),
  // and the arithmetic functions the ALU also has.
  kBypass,
  kInvert,
  kAbs,
  kSquare,
  kRelu,
  kRsqrt,
  kReciprocal,
  // Reductions only: the mean of the reduced elements.
  kAverage,
  kCount,
};

// The Scalar engine's functions (nisa.activation's `op`).
enum class NkiActivation : int32_t {
  kCopy = 0,
  kExp,
  kLog,
  kSqrt,
  kRsqrt,
  kReciprocal,
  kSin,
  kCos,
  kTanh,
  kSigmoid,
  kRelu,
  kGelu,
  kGeluApproxTanh,
  kSilu,
  kSquare,
  kAbs,
  kSign,
  kErf,
  kSoftplus,
  kArctan,
  kNegative,
  kGeluDx,
  kGeluApproxSigmoid,
  kGeluApproxSigmoidDx,
  kSiluDx,
  kMish,
  kErfDx,
  kTan,
  kCeil,
  kFloor,
  kTrunc,
  kCount,
};

// One nki.isa instruction. Operands are at fixed positions per opcode
// (absent optional ones have no value); `alu`, `scalars` and `flags` as
// listed. Trailing flags may be left out (false).
//
// Accumulators. The Scalar engine (activation, activate2) and the Vector
// engine (tensor_scalar_reduce, tensor_scalar_cumulative, range_select,
// select_reduce, exponential) each keep one float32 accumulator per
// partition across instructions of a kernel (NaN at launch). An
// instruction that reduces names a reduce command with three flags
// (reset, reduce, load): reset sets the accumulator to the reduce
// operator's identity, load to the instruction's init value, reduce folds
// the instruction's per-partition result into it; with none of them the
// instruction leaves it unchanged. Its reduce_res operand, if any,
// receives the accumulator afterwards.
enum class NkiOpcode : int32_t {
  // operands: dst, src (element counts equal; casts when dtypes differ).
  kDmaCopy = 0,
  // operands: dst, src (on chip).
  kTensorCopy,
  // operands: dst; scalars: value.
  kMemset,
  // operands: dst, data1, data2; alu: op.
  kTensorTensor,
  // operands: dst, data, operand0 tile?, operand1 tile?; alu: op0, op1
  // (absent: kCount); scalars: operand0, operand1 (where no tile);
  // flags: reverse0, reverse1.
  kTensorScalar,
  // operands: dst, data, bias tile?, scale tile?, reduce_res?; activation:
  // function; alu: reduce op (kCount: none); scalars: scale (where no tile).
  // dst = f(data * scale + bias); reduce_res = reduce(dst's values) over the
  // free dimensions. flags (optional): reset, reduce, load on the Scalar
  // engine's accumulator; without them reduce_res gets this instruction's
  // reduction alone.
  kActivation,
  // operands: dst (PSUM), stationary [K, M], moving [K, N];
  // flags: accumulate, transpose, double_row. dst [M, N] (+)= stationary^T
  // @ moving in float32 (dst float32); with transpose, dst = stationary^T
  // exactly (the Tensor engine's transpose mode; dst of stationary's
  // dtype); with double_row (fp8), stationary [K, 2, M] and moving
  // [K, 2, N] contract over both K and the 2.
  kMatmul,
  // operands: dst [F, P], src [P, F].
  kTranspose,
  // operands: dst, data; alu: op (add, multiply, maximum, minimum);
  // axes: free dimensions of data reduced; flags: negate, keepdims.
  kTensorReduce,
  // operands: dst (int32 or float32); scalars: offset, channel_multiplier;
  // dst[p, f...] = offset + channel_multiplier * p + sum(f_k * axes[k])
  // (axes hold the pattern's per-dimension steps).
  kIota,
  // operands: dst, src, predicate: dst = src where predicate != 0 (dst
  // keeps its values elsewhere).
  kTensorCopyPredicated,
  // operands: dst, src: as kDmaCopy (the access patterns transpose).
  kDmaTranspose,
  // operands: dst, data0, data1, initial tile?; alu: op0, op1; scalars:
  // initial; flags: reverse0, reverse1. Along each partition's free
  // elements: r = op1(op0(data0[i], r), data1[i]) from r = initial,
  // dst[i] = r (reverse0 swaps op0's operands, reverse1 op1's).
  kTensorTensorScan,
  // operands: dst, src, imm0 tile?, init tile?; alu: op0, op1; scalars:
  // imm0, init; flags: reset, reduce, load. With the Vector accumulator a:
  // a = op1(op0(src[i], imm0), a), dst[i] = a, along the free elements.
  kTensorScalarCumulative,
  // operands: dst [1, F], data [P, F]; alu: op (add, maximum, minimum,
  // bitwise_and, bitwise_or, average): dst = op over the partitions.
  kTensorPartitionReduce,
  // operands: dst, data, operand0 tile?, operand1; alu: op0, op1; scalars:
  // operand0; flags: reverse0, reverse1. dst = op1(op0(data, operand0),
  // operand1) elementwise (operand1 a tile of data's shape).
  kScalarTensorTensor,
  // operands: dst, data, operand0 tile?, reduce_res?, init tile?; alu: op0,
  // reduce op; scalars: operand0, init; flags: reverse0, negate, reset,
  // reduce, load. dst = op0(data, operand0); the Vector accumulator folds
  // each partition's reduction of dst; reduce_res = it (negated with negate).
  kTensorScalarReduce,
  // operands: dst, on_true; alu: compare op; scalars: offset,
  // channel_multiplier, on_false; axes: steps per free dimension.
  // dst = on_true where cmp(offset + channel_multiplier * p + sum(f_k *
  // axes[k]), 0), else on_false.
  kAffineSelect,
  // operands: dst, on_true, bound0 [P, 1], bound1 [P, 1], reduce_res?; alu:
  // comp0, comp1; scalars: range_start, on_false; flags: reset, reduce.
  // dst[i] = on_true[i] where comp0(start + i, bound0) and comp1(start + i,
  // bound1), else on_false; the Vector accumulator takes the maximum.
  kRangeSelect,
  // operands: dst, predicate, on_true, on_false tile?, reduce_res?;
  // scalars: on_false; flags: reverse_pred, reset, reduce. dst = on_true
  // where predicate != 0 (== 0 with reverse_pred), else on_false; the
  // Vector accumulator takes the maximum.
  kSelectReduce,
  // operands: dst [P, 6], data [P, F]: per half (even, odd elements):
  // count, mean, variance * count.
  kBnStats,
  // operands: dst [P, 2], data [P, 3k] (count, mean, M2 triples): mean and
  // population variance of the union.
  kBnAggr,
  // operands: dst [P, 8], src: the 8 largest of each partition, descending.
  kMax8,
  // operands: dst [P, 8] (uint), data, vals [P, 8]: the index of each
  // value's first occurrence (vals equal to an earlier one take the next
  // occurrence); all ones where there is none.
  kFindIndex8,
  // operands: dst, data, vals [P, 8], dst_idx?; scalars: imm. dst = data
  // with the first occurrence of each value replaced by imm (as
  // kFindIndex8 pairs them); dst_idx = their indices.
  kMatchReplace8,
  // operands: dst, src; axes: 32 source partitions (255: leave dst's)
  // applied to each group of 32 partitions.
  kStreamShuffle,
  // operands: dst, src, index (uint16); scalars: elements per index,
  // valid indices. Per group of 16 partitions, the group's indices (read
  // partition-first) are element offsets into each partition's row;
  // dst[p, k*E .. k*E+E) = src[p, idx[k] .. idx[k]+E).
  kLocalGather,
  // operands: dst, data, indices: dst[p, j] = data[p, indices[p, j]].
  kNGather,
  // operands: dst [1, 2, n], segment_ids [1, n]: each element's segment
  // start and exclusive end (runs of equal ids; id 0 pads: n and -1).
  kSequenceBounds,
  // operands: dst; scalars: low, high; flags: bits. Uniform values in
  // [low, high) from the core's generator; with bits, random integers.
  kRandom,
  // operands: dst, data, prob tile?; scalars: prob. dst = 0 with
  // probability prob, else data.
  kDropout,
  // operands: seed [1, 1]: the core's generator restarts from it.
  kSetRandomSeed,
  // operands: dst, src, max tile?, reduce_res?, init tile?; scalars: max,
  // init; flags: reset, reduce, load. dst = exp(src - max); the Vector
  // accumulator sums dst.
  kExponential,
  // operands: dst [P, F + 1] (int32), src [P, F]; scalars: index offset,
  // padding. Partitions 0, 16, ..., 112: the nonzero elements' indices plus
  // the offset, padding after them, their count last.
  kNonzeroWithCount,
  // operands: dst, src0, src1, ... (at most 16): dst = the sum, in
  // float32, of the sources (a DMA that computes).
  kDmaCompute,
  kCount,
};

struct NkiInstruction {
  NkiOpcode opcode = NkiOpcode::kDmaCopy;
  std::vector<std::optional<NkiAccess>> operands;
  std::vector<NkiAluOp> alu;
  NkiActivation activation = NkiActivation::kCopy;
  std::vector<double> scalars;
  std::vector<bool> flags;
  std::vector<int64_t> axes;
  // Index into NkiKernelPlan::source_locations; shown in errors.
  uint32_t source = 0;
};

// The on-chip memories a kernel was traced for (trn2, NeuronCore-v3).
struct NkiTarget {
  uint32_t partitions = 128;
  uint64_t sbuf_partition_bytes = 212'984;
  uint64_t psum_partition_bytes = 16'384;
};

struct NkiKernelPlan {
  // "sin_kernel", shown in errors.
  std::string name;
  NkiTarget target;
  std::vector<NkiAllocation> allocations;
  std::vector<NkiInstruction> instructions;
  // "kernels.py:12", one per traced call site.
  std::vector<std::string> source_locations;
};

// Bounds on what one kernel may describe (a fully unrolled 4096x1024x2048
// matmul is ~3,300 instructions).
inline constexpr size_t kNkiMaxInstructions = size_t{1} << 20;
inline constexpr size_t kNkiMaxAllocations = size_t{1} << 16;
inline constexpr size_t kNkiMaxAccessDims = 5;
inline constexpr int64_t kNkiMaxCount = int64_t{1} << 24;
inline constexpr int64_t kNkiMaxHbmElements = int64_t{1} << 40;
inline constexpr uint32_t kNkiMaxPartitions = 128;
inline constexpr uint64_t kNkiMaxSbufPartitionBytes = 256 * 1024;
inline constexpr uint64_t kNkiMaxPsumPartitionBytes = 64 * 1024;
inline constexpr size_t kNkiMaxStringBytes = 256;
// Fields of one instruction, at most (dma_compute's 16 sources and its
// destination; tensor_scalar_reduce's flags; a shuffle mask's 32 axes).
inline constexpr size_t kNkiMaxOperands = 17;
inline constexpr size_t kNkiMaxAluOps = 2;
inline constexpr size_t kNkiMaxScalars = 3;
inline constexpr size_t kNkiMaxFlags = 5;
inline constexpr size_t kNkiMaxAxes = 32;

// Checks that `plan` is well formed, so that running it touches only its
// own allocations and each of them lies in its memory: the target within
// bounds; every allocation's dtype known, tiles inside SBUF or PSUM, HBM
// allocations at launch addresses; every access inside its allocation (a
// tile's first dimension walking whole partitions, the others staying
// within one); each instruction's opcode, operand count, memory spaces,
// operators and attribute counts. Returns "" when it is, else what is wrong
// ("instruction 12 (nc_matmul): ..."). Element counts and shapes that
// disagree are left to the interpreter, which fails the launch naming them.
std::string CheckNkiKernel(const NkiKernelPlan& plan);

// Whether `instruction` writes operand `i` (its destination; a reduce_res,
// dst_idx).
bool NkiWritesOperand(const NkiInstruction& instruction, size_t i);

// Names as nki.language spells them ("add", "exp"); nullopt for others.
std::optional<NkiAluOp> NkiAluOpNamed(std::string_view name);
std::optional<NkiActivation> NkiActivationNamed(std::string_view name);
std::optional<NkiOpcode> NkiOpcodeNamed(std::string_view name);
std::string_view NkiAluOpName(NkiAluOp op);
std::string_view NkiActivationName(NkiActivation function);
std::string_view NkiOpcodeName(NkiOpcode opcode);

}  // namespace neuron::rtd

#endif  // NEURON_RTD_NKI_KERNEL_H_

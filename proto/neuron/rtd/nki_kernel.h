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
// coordinates (a tile's element (p, f) is p * free_elements + f); on chip,
// its first dimension walks partitions (stride free_elements).
#ifndef NEURON_RTD_NKI_KERNEL_H_
#define NEURON_RTD_NKI_KERNEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace neuron::rtd {

enum class NkiSpace : int32_t { kHbm = 0, kSbuf = 1, kPsum = 2 };

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

// A strided view of allocation `allocation`: element `offset` plus
// sum(i_k * dims[k].stride) for 0 <= i_k < dims[k].count.
struct NkiAccess {
  uint32_t allocation = 0;
  int64_t offset = 0;
  std::vector<NkiDim> dims;
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
  kCount,
};

// One nki.isa instruction. Operands are at fixed positions per opcode
// (absent optional ones have no value); `alu`, `scalars` and `flags` as
// listed.
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
  // free dimensions.
  kActivation,
  // operands: dst (PSUM, float32), stationary [K, M], moving [K, N];
  // flags: accumulate. dst [M, N] (+)= stationary^T @ moving in float32.
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

// Whether `instruction` writes operand `i` (its destination; an
// activation's reduce_res).
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

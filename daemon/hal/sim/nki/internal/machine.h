// One launch of an NKI kernel plan on a NeuronCore simulated on the CPU:
// the kernel's memories as ATen views (HBM tensors in place, SBUF and PSUM
// tiles in the core's memory), the engines' accumulators, and the
// execution of each instruction. RunNkiKernel (nki_interpreter.h) drives
// it; instruction groups live in machine_*.cc.
//
// Lifetime: a Machine lives for one launch and borrows the plan, the HBM
// buffers and the core's memory. Thread-safety: none (a core runs one
// kernel at a time, on its worker's thread).
#ifndef NEURON_RTD_DAEMON_HAL_SIM_NKI_INTERNAL_MACHINE_H_
#define NEURON_RTD_DAEMON_HAL_SIM_NKI_INTERNAL_MACHINE_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "daemon/hal/sim/nki/nki_interpreter.h"
#include "neuron/rtd/nki_kernel.h"

namespace neuron::rtd::nki::internal {

// `value` as a float32 scalar tensor, rounded as the engines round an
// immediate (to nearest; past float32's range to its largest value or
// infinity), not refused as c10's checked conversions would.
at::Tensor FloatImmediate(double value);
float RoundToFloat(double value);

// One float32 value per partition that an engine keeps across
// instructions (nki.isa's reduce_cmd); NaN until reset or loaded.
class Accumulator {
 public:
  explicit Accumulator(int64_t partitions);

  // Applies an instruction's reduce command (flags reset, reduce, load at
  // `first_flag` of `flags`) with its per-partition result `values` ([P])
  // under `op`; `init` ([P]) is what load sets. Returns the accumulator's
  // values for the instruction's partitions afterwards.
  at::Tensor Apply(const std::vector<bool>& flags, size_t first_flag, NkiAluOp op,
                   const at::Tensor& values, const at::Tensor& init);

 private:
  at::Tensor values_;
};

class Machine {
 public:
  Machine(const NkiKernelPlan& plan, std::span<const NkiHbmBuffer> hbm, NkiCoreMemory& memory);

  absl::Status CheckBuffers() const;

  // Fills with the uninitialized-memory pattern every tile that some
  // instruction reads before an instruction has written all of it.
  void PoisonTilesReadBeforeWritten();

  // Runs one instruction; throws c10::Error (or std::exception) when its
  // operands disagree.
  void Execute(const NkiInstruction& instruction);

 private:
  // -- memory (machine.cc) ------------------------------------------------
  at::Tensor Whole(const NkiAllocation& allocation);
  int64_t RowStride(const NkiAllocation& allocation) const;
  uint8_t* TileStart(const NkiAllocation& allocation);
  bool CoversAllocation(const NkiAccess& access) const;
  static bool IsPureWrite(const NkiInstruction& instruction, size_t i);

  // The access's elements in memory, in its own dtype (bytes for custom
  // dtypes such as float8_e4m3).
  at::Tensor View(const NkiAccess& access);
  int32_t DtypeOf(const NkiAccess& access) const;
  // Values as float32, and as int64 (integer operands of bit operators).
  at::Tensor Read(const NkiAccess& access);
  at::Tensor ReadInteger(const NkiAccess& access);
  // Writes `value` (element counts equal) rounded to the access's dtype.
  void Write(const NkiAccess& access, const at::Tensor& value);
  // dst = src elementwise, converting without a float32 trip where both
  // are torch dtypes (integers stay exact).
  void Copy(const NkiAccess& dst, const NkiAccess& src);
  void Fill(const NkiAccess& dst, double value);
  // An indirect access (NkiIndirect): the element offsets it reaches, each
  // checked to lie inside its tensor (INVALID_ARGUMENT naming the index
  // otherwise); the elements gathered from them; values scattered to them
  // (added where `accumulate`, duplicates included).
  at::Tensor IndirectOffsets(const NkiAccess& access);
  at::Tensor Gather(const NkiAccess& access);
  // Gather's elements as float32 values.
  at::Tensor GatherValues(const NkiAccess& access);
  void Scatter(const NkiAccess& access, const at::Tensor& values, bool accumulate);
  // A per-partition operand ([P, 1], float32) from a tile, or `immediate`.
  at::Tensor Column(const std::optional<NkiAccess>& tile, double immediate, int64_t partitions);
  // [P, F] float32 of an access (its free dimensions flattened).
  at::Tensor ReadRows(const NkiAccess& access);

  // -- elementwise, reductions and the Tensor engine (machine_vector.cc) -
  void TensorTensor(const NkiInstruction& instruction);
  void TensorScalar(const NkiInstruction& instruction);
  void Activation(const NkiInstruction& instruction);
  void Matmul(const NkiInstruction& instruction);
  void TensorReduce(const NkiInstruction& instruction);
  void TensorTensorScan(const NkiInstruction& instruction);
  void TensorScalarCumulative(const NkiInstruction& instruction);
  void TensorPartitionReduce(const NkiInstruction& instruction);
  void ScalarTensorTensor(const NkiInstruction& instruction);
  void TensorScalarReduce(const NkiInstruction& instruction);
  void Exponential(const NkiInstruction& instruction);
  void BnStats(const NkiInstruction& instruction);
  void BnAggr(const NkiInstruction& instruction);
  void DmaCompute(const NkiInstruction& instruction);

  // -- selection, search, gathers and random numbers (machine_select.cc) -
  void Iota(const NkiInstruction& instruction);
  void CopyPredicated(const NkiInstruction& instruction);
  void AffineSelect(const NkiInstruction& instruction);
  void RangeSelect(const NkiInstruction& instruction);
  void SelectReduce(const NkiInstruction& instruction);
  void Max8(const NkiInstruction& instruction);
  void FindIndex8(const NkiInstruction& instruction);
  void MatchReplace8(const NkiInstruction& instruction);
  void StreamShuffle(const NkiInstruction& instruction);
  void LocalGather(const NkiInstruction& instruction);
  void NGather(const NkiInstruction& instruction);
  void SequenceBounds(const NkiInstruction& instruction);
  void NonzeroWithCount(const NkiInstruction& instruction);
  void Random(const NkiInstruction& instruction);
  void Dropout(const NkiInstruction& instruction);
  void SetRandomSeed(const NkiInstruction& instruction);

  const NkiKernelPlan& plan_;
  std::span<const NkiHbmBuffer> hbm_;
  NkiCoreMemory& memory_;
  Accumulator scalar_accumulator_;
  Accumulator vector_accumulator_;
};

}  // namespace neuron::rtd::nki::internal

#endif  // NEURON_RTD_DAEMON_HAL_SIM_NKI_INTERNAL_MACHINE_H_

#include "daemon/hal/sim/nki/nki_interpreter.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "neuron/rtd/eager_op.h"

namespace neuron::rtd::nki {
namespace {

at::TensorOptions OptionsOf(int32_t dtype) {
  return at::TensorOptions().dtype(static_cast<at::ScalarType>(dtype)).device(at::kCPU);
}

// Views of the kernel's allocations and the instructions' arithmetic.
class Machine {
 public:
  Machine(const NkiKernelPlan& plan, std::span<const NkiHbmBuffer> hbm, NkiCoreMemory& memory)
      : plan_(plan), hbm_(hbm), memory_(memory) {}

  absl::Status CheckBuffers() const {
    for (const NkiAllocation& allocation : plan_.allocations) {
      if (allocation.space != NkiSpace::kHbm) continue;
      const uint64_t needed =
          static_cast<uint64_t>(allocation.elements) * ElementBytes(allocation.dtype);
      if (allocation.address_index >= hbm_.size() ||
          (needed > 0 && (hbm_[allocation.address_index].data == nullptr ||
                          hbm_[allocation.address_index].bytes < needed))) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "NKI kernel '%s': HBM tensor '%s' needs %d bytes at address %d", plan_.name,
            allocation.name, needed, allocation.address_index));
      }
    }
    return absl::OkStatus();
  }

  // Fills with the uninitialized-memory pattern every tile that some
  // instruction reads before an instruction has written all of it: a tile
  // written whole first needs no fill, which spares most kernels a fill of
  // every tile on every launch.
  void PoisonTilesReadBeforeWritten() {
    std::vector<bool> written(plan_.allocations.size(), false);
    std::vector<bool> poison(plan_.allocations.size(), false);
    for (const NkiInstruction& instruction : plan_.instructions) {
      for (size_t i = 0; i < instruction.operands.size(); ++i) {
        const std::optional<NkiAccess>& operand = instruction.operands[i];
        if (!operand || IsPureWrite(instruction, i)) continue;
        if (!written[operand->allocation]) poison[operand->allocation] = true;
      }
      for (size_t i = 0; i < instruction.operands.size(); ++i) {
        const std::optional<NkiAccess>& operand = instruction.operands[i];
        if (operand && IsPureWrite(instruction, i) && CoversAllocation(*operand)) {
          written[operand->allocation] = true;
        }
      }
    }
    for (size_t a = 0; a < plan_.allocations.size(); ++a) {
      const NkiAllocation& allocation = plan_.allocations[a];
      if (allocation.space == NkiSpace::kHbm || !poison[a]) continue;
      at::Tensor tile = Whole(allocation);
      if (at::isFloatingType(tile.scalar_type())) {
        tile.fill_(std::numeric_limits<float>::quiet_NaN());
      } else {
        tile.fill_(4);
      }
    }
  }

  void Execute(const NkiInstruction& instruction) {
    const auto& operands = instruction.operands;
    switch (instruction.opcode) {
      case NkiOpcode::kDmaCopy:
      case NkiOpcode::kTensorCopy:
        Assign(View(*operands[0]), View(*operands[1]));
        return;
      case NkiOpcode::kMemset:
        View(*operands[0]).fill_(instruction.scalars[0]);
        return;
      case NkiOpcode::kTensorTensor: {
        const at::Tensor data1 = Float(View(*operands[1]));
        const at::Tensor data2 = Float(View(*operands[2]));
        TORCH_CHECK(data1.numel() == data2.numel(), "data1 has ", data1.numel(),
                    " elements and data2 ", data2.numel());
        at::Tensor destination = View(*operands[0]);
        if (!AluInto(instruction.alu[0], data1, data2.reshape(data1.sizes()), destination)) {
          Assign(destination, Alu(instruction.alu[0], data1, data2.reshape(data1.sizes())));
        }
        return;
      }
      case NkiOpcode::kTensorScalar: {
        at::Tensor result = Float(View(*operands[1]));
        for (size_t i = 0; i < 2; ++i) {
          if (instruction.alu[i] == NkiAluOp::kCount) continue;
          const at::Tensor operand = Operand(operands[2 + i], instruction.scalars[i], result);
          result = instruction.flags[i] ? Alu(instruction.alu[i], operand, result)
                                        : Alu(instruction.alu[i], result, operand);
        }
        Assign(View(*operands[0]), result);
        return;
      }
      case NkiOpcode::kActivation: {
        at::Tensor x = Float(View(*operands[1]));
        if (operands[3] || instruction.scalars[0] != 1.0) {
          x = x * Operand(operands[3], instruction.scalars[0], x);
        }
        if (operands[2]) x = x + Operand(operands[2], 0, x);
        const at::Tensor y = Activate(instruction.activation, x);
        Assign(View(*operands[0]), y);
        if (operands[4]) {
          TORCH_CHECK(instruction.alu[0] != NkiAluOp::kCount,
                      "reduce_res needs a reduce operator");
          Assign(View(*operands[4]), Reduce(instruction.alu[0], y, FreeDims(y)));
        }
        return;
      }
      case NkiOpcode::kMatmul: {
        const at::Tensor stationary = Float(View(*operands[1]));
        const at::Tensor moving = Float(View(*operands[2]));
        const int64_t contraction = stationary.size(0);
        TORCH_CHECK(moving.size(0) == contraction, "stationary has ", contraction,
                    " partitions and moving ", moving.size(0));
        const at::Tensor product =
            stationary.reshape({contraction, -1}).t().mm(moving.reshape({contraction, -1}));
        at::Tensor destination = View(*operands[0]);
        TORCH_CHECK(destination.numel() == product.numel(), "the destination has ",
                    destination.numel(), " elements; the product [", product.size(0), ", ",
                    product.size(1), "] has ", product.numel());
        if (instruction.flags[0]) {
          destination.add_(product.reshape(destination.sizes()));
        } else {
          destination.copy_(product.reshape(destination.sizes()));
        }
        return;
      }
      case NkiOpcode::kTranspose: {
        const at::Tensor source = View(*operands[1]);
        Assign(View(*operands[0]), source.reshape({source.size(0), -1}).t());
        return;
      }
      case NkiOpcode::kTensorReduce: {
        const at::Tensor data = Float(View(*operands[1]));
        at::Tensor result = Reduce(instruction.alu[0], data, instruction.axes);
        if (instruction.flags[0]) result = result.neg();
        Assign(View(*operands[0]), result);
        return;
      }
      case NkiOpcode::kIota: {
        at::Tensor destination = View(*operands[0]);
        const int64_t dims = destination.dim();
        TORCH_CHECK(static_cast<int64_t>(instruction.axes.size()) == dims - 1,
                    "iota's pattern has ", instruction.axes.size(), " steps for ", dims - 1,
                    " free dimensions");
        std::vector<int64_t> shape(dims, 1);
        shape[0] = destination.size(0);
        at::Tensor values =
            at::arange(destination.size(0), at::kDouble).view(shape) * instruction.scalars[1] +
            instruction.scalars[0];
        for (int64_t k = 1; k < dims; ++k) {
          std::vector<int64_t> along(dims, 1);
          along[k] = destination.size(k);
          values = values + at::arange(destination.size(k), at::kDouble).view(along) *
                                static_cast<double>(instruction.axes[k - 1]);
        }
        destination.copy_(values.expand(destination.sizes()));
        return;
      }
      case NkiOpcode::kTensorCopyPredicated: {
        at::Tensor destination = View(*operands[0]);
        const at::Tensor source = View(*operands[1]);
        const at::Tensor predicate = View(*operands[2]);
        TORCH_CHECK(source.numel() == destination.numel() &&
                        predicate.numel() == destination.numel(),
                    "dst, src and predicate have ", destination.numel(), ", ", source.numel(),
                    " and ", predicate.numel(), " elements");
        const at::Tensor chosen =
            at::where(predicate.reshape(destination.sizes()).ne(0),
                      source.reshape(destination.sizes()).to(destination.scalar_type()),
                      destination);
        destination.copy_(chosen);
        return;
      }
      case NkiOpcode::kCount:
        break;
    }
    TORCH_CHECK(false, "unknown opcode");
  }

 private:
  // Whether operand `i` of `instruction` is only written (a destination
  // that is not also read, as an accumulating matmul's and a predicated
  // copy's are).
  static bool IsPureWrite(const NkiInstruction& instruction, size_t i) {
    if (instruction.opcode == NkiOpcode::kMatmul && i == 0) return !instruction.flags[0];
    if (instruction.opcode == NkiOpcode::kTensorCopyPredicated && i == 0) return false;
    return i == 0 || (instruction.opcode == NkiOpcode::kActivation && i == 4);
  }

  // Whether `access` is the whole tile: every partition, and free
  // dimensions that walk its free elements contiguously.
  bool CoversAllocation(const NkiAccess& access) const {
    const NkiAllocation& allocation = plan_.allocations[access.allocation];
    if (access.offset != 0 || access.dims[0].count != allocation.partitions) return false;
    int64_t step = 1;
    for (size_t k = access.dims.size(); k-- > 1;) {
      if (access.dims[k].count != 1 && access.dims[k].stride != step) return false;
      step *= access.dims[k].count;
    }
    return step == allocation.free_elements;
  }

  at::Tensor Whole(const NkiAllocation& allocation) {
    const int64_t row = RowStride(allocation);
    return at::from_blob(TileStart(allocation), {allocation.partitions, allocation.free_elements},
                         {row, 1}, OptionsOf(allocation.dtype));
  }

  int64_t RowStride(const NkiAllocation& allocation) const {
    const uint64_t bytes = allocation.space == NkiSpace::kSbuf
                               ? memory_.target().sbuf_partition_bytes
                               : memory_.target().psum_partition_bytes;
    return static_cast<int64_t>(bytes / ElementBytes(allocation.dtype));
  }

  uint8_t* TileStart(const NkiAllocation& allocation) {
    const bool sbuf = allocation.space == NkiSpace::kSbuf;
    const uint64_t partition_bytes = sbuf ? memory_.target().sbuf_partition_bytes
                                          : memory_.target().psum_partition_bytes;
    uint8_t* base = sbuf ? memory_.sbuf() : memory_.psum();
    return base + allocation.partition_start * partition_bytes + allocation.byte_offset;
  }

  at::Tensor View(const NkiAccess& access) {
    const NkiAllocation& allocation = plan_.allocations[access.allocation];
    std::vector<int64_t> sizes;
    std::vector<int64_t> strides;
    for (const NkiDim& dim : access.dims) {
      sizes.push_back(dim.count);
      strides.push_back(dim.stride);
    }
    if (allocation.space == NkiSpace::kHbm) {
      const at::Tensor whole =
          at::from_blob(hbm_[allocation.address_index].data, {allocation.elements},
                        OptionsOf(allocation.dtype));
      return whole.as_strided(sizes, strides, access.offset);
    }
    // Partitions are rows of the core's memory, not of the tile.
    const int64_t row = RowStride(allocation);
    strides[0] = row;
    const int64_t offset =
        access.offset / allocation.free_elements * row + access.offset % allocation.free_elements;
    return Whole(allocation).as_strided(sizes, strides, offset);
  }

  static at::Tensor Float(const at::Tensor& tensor) { return tensor.to(at::kFloat); }

  // Writes `value` into `destination`, rounding to its dtype; only the
  // element counts must agree (a DMA moves elements, not shapes).
  static void Assign(at::Tensor destination, const at::Tensor& value) {
    TORCH_CHECK(destination.numel() == value.numel(), "the destination has ",
                destination.numel(), " elements; the value ", value.numel());
    if (destination.sizes().equals(value.sizes())) {
      destination.copy_(value);
    } else {
      destination.copy_(value.reshape(destination.sizes()));
    }
  }

  // A tile operand (one value per partition, broadcast along the free
  // dimensions of `like`) or an immediate.
  at::Tensor Operand(const std::optional<NkiAccess>& tile, double immediate,
                     const at::Tensor& like) {
    if (tile) return ScalarTile(*tile, like);
    return at::scalar_tensor(immediate, at::kFloat);
  }

  at::Tensor ScalarTile(const NkiAccess& access, const at::Tensor& like) {
    at::Tensor values = Float(View(access));
    TORCH_CHECK(values.numel() == like.size(0), "a per-partition operand has ", values.numel(),
                " elements for ", like.size(0), " partitions");
    std::vector<int64_t> shape(like.dim(), 1);
    shape[0] = like.size(0);
    return values.reshape(shape);
  }

  static std::vector<int64_t> FreeDims(const at::Tensor& tensor) {
    std::vector<int64_t> dims;
    for (int64_t k = 1; k < tensor.dim(); ++k) dims.push_back(k);
    return dims;
  }

  // Writes op(a, b) straight into `destination` (computed in float32,
  // rounded once on the write) where ATen has an out= form and the shapes
  // agree; false otherwise.
  static bool AluInto(NkiAluOp op, const at::Tensor& a, const at::Tensor& b,
                      at::Tensor& destination) {
    // Elementwise out= forms allow an output that is exactly an input, not
    // one that overlaps it in part.
    auto separate = [&](const at::Tensor& input) {
      const at::MemOverlapStatus overlap = at::get_overlap_status(destination, input);
      return overlap == at::MemOverlapStatus::No || overlap == at::MemOverlapStatus::Full;
    };
    if (!destination.sizes().equals(a.sizes()) || !at::isFloatingType(destination.scalar_type()) ||
        !separate(a) || !separate(b)) {
      return false;
    }
    switch (op) {
      case NkiAluOp::kAdd:
        at::add_out(destination, a, b);
        return true;
      case NkiAluOp::kSubtract:
        at::sub_out(destination, a, b);
        return true;
      case NkiAluOp::kMultiply:
        at::mul_out(destination, a, b);
        return true;
      case NkiAluOp::kDivide:
        at::div_out(destination, a, b);
        return true;
      default:
        return false;
    }
  }

  static at::Tensor Alu(NkiAluOp op, const at::Tensor& a, const at::Tensor& b) {
    switch (op) {
      case NkiAluOp::kAdd:
        return a + b;
      case NkiAluOp::kSubtract:
        return a - b;
      case NkiAluOp::kMultiply:
        return a * b;
      case NkiAluOp::kDivide:
        return a / b;
      case NkiAluOp::kMaximum:
        return at::maximum(a, b);
      case NkiAluOp::kMinimum:
        return at::minimum(a, b);
      case NkiAluOp::kPower:
        return at::pow(a, b);
      case NkiAluOp::kEqual:
        return at::eq(a, b).to(at::kFloat);
      case NkiAluOp::kNotEqual:
        return at::ne(a, b).to(at::kFloat);
      case NkiAluOp::kGreater:
        return at::gt(a, b).to(at::kFloat);
      case NkiAluOp::kGreaterEqual:
        return at::ge(a, b).to(at::kFloat);
      case NkiAluOp::kLess:
        return at::lt(a, b).to(at::kFloat);
      case NkiAluOp::kLessEqual:
        return at::le(a, b).to(at::kFloat);
      case NkiAluOp::kAbsMax:
        return at::maximum(a.abs(), b.abs());
      case NkiAluOp::kAbsMin:
        return at::minimum(a.abs(), b.abs());
      case NkiAluOp::kCount:
        break;
    }
    TORCH_CHECK(false, "unknown operator");
  }

  static at::Tensor Reduce(NkiAluOp op, const at::Tensor& data, const std::vector<int64_t>& axes) {
    TORCH_CHECK(!axes.empty(), "no axes to reduce");
    for (int64_t axis : axes) {
      TORCH_CHECK(axis >= 1 && axis < data.dim(), "axis ", axis,
                  " is not a free dimension of the data (", data.dim(), " dimensions)");
    }
    switch (op) {
      case NkiAluOp::kAdd:
        return data.sum(axes, /*keepdim=*/true);
      case NkiAluOp::kMultiply: {
        at::Tensor result = data;
        for (int64_t axis : axes) result = result.prod(axis, /*keepdim=*/true);
        return result;
      }
      case NkiAluOp::kMaximum:
        return data.amax(axes, /*keepdim=*/true);
      case NkiAluOp::kMinimum:
        return data.amin(axes, /*keepdim=*/true);
      default:
        break;
    }
    TORCH_CHECK(false, "reduction by '", std::string(NkiAluOpName(op)),
                "' is not supported (add, multiply, maximum, minimum)");
  }

  static at::Tensor Activate(NkiActivation function, const at::Tensor& x) {
    switch (function) {
      case NkiActivation::kCopy:
        return x;
      case NkiActivation::kExp:
        return x.exp();
      case NkiActivation::kLog:
        return x.log();
      case NkiActivation::kSqrt:
        return x.sqrt();
      case NkiActivation::kRsqrt:
        return x.rsqrt();
      case NkiActivation::kReciprocal:
        return x.reciprocal();
      case NkiActivation::kSin:
        return x.sin();
      case NkiActivation::kCos:
        return x.cos();
      case NkiActivation::kTanh:
        return x.tanh();
      case NkiActivation::kSigmoid:
        return x.sigmoid();
      case NkiActivation::kRelu:
        return x.relu();
      case NkiActivation::kGelu:
        return at::gelu(x);
      case NkiActivation::kGeluApproxTanh:
        return at::gelu(x, "tanh");
      case NkiActivation::kSilu:
        return at::silu(x);
      case NkiActivation::kSquare:
        return x * x;
      case NkiActivation::kAbs:
        return x.abs();
      case NkiActivation::kSign:
        return x.sign();
      case NkiActivation::kErf:
        return x.erf();
      case NkiActivation::kSoftplus:
        return at::softplus(x);
      case NkiActivation::kArctan:
        return x.atan();
      case NkiActivation::kNegative:
        return x.neg();
      case NkiActivation::kCount:
        break;
    }
    TORCH_CHECK(false, "unknown activation function");
  }

  const NkiKernelPlan& plan_;
  std::span<const NkiHbmBuffer> hbm_;
  NkiCoreMemory& memory_;
};

}  // namespace

NkiCoreMemory::NkiCoreMemory(const NkiTarget& target)
    : target_(target),
      sbuf_(new uint8_t[target.partitions * target.sbuf_partition_bytes]),
      psum_(new uint8_t[target.partitions * target.psum_partition_bytes]) {}

NkiCoreMemory& ThreadCoreMemory(const NkiTarget& target) {
  thread_local std::unique_ptr<NkiCoreMemory> memory;
  if (memory == nullptr || !memory->Holds(target)) memory = std::make_unique<NkiCoreMemory>(target);
  return *memory;
}

bool NkiCoreMemory::Holds(const NkiTarget& target) const {
  return target.partitions <= target_.partitions &&
         target.sbuf_partition_bytes == target_.sbuf_partition_bytes &&
         target.psum_partition_bytes == target_.psum_partition_bytes;
}

absl::Status RunNkiKernel(const NkiKernelPlan& plan, std::span<const NkiHbmBuffer> hbm,
                          NkiCoreMemory& memory) {
  if (!memory.Holds(plan.target)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "NKI kernel '%s' was traced for a core of %d partitions of %d SBUF and %d PSUM bytes",
        plan.name, plan.target.partitions, plan.target.sbuf_partition_bytes,
        plan.target.psum_partition_bytes));
  }
  Machine machine(plan, hbm, memory);
  if (absl::Status buffers = machine.CheckBuffers(); !buffers.ok()) return buffers;
  c10::InferenceMode inference;
  machine.PoisonTilesReadBeforeWritten();
  for (size_t i = 0; i < plan.instructions.size(); ++i) {
    const NkiInstruction& instruction = plan.instructions[i];
    auto failure = [&](std::string_view message,
                       absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
      const std::string location = instruction.source < plan.source_locations.size()
                                       ? " at " + plan.source_locations[instruction.source]
                                       : "";
      return absl::Status(code, absl::StrFormat("NKI kernel '%s' instruction %d (%s)%s: %s",
                                                plan.name, i, NkiOpcodeName(instruction.opcode),
                                                location, message));
    };
    try {
      machine.Execute(instruction);
    } catch (const c10::OutOfMemoryError& error) {
      return failure(error.what_without_backtrace(), absl::StatusCode::kResourceExhausted);
    } catch (const c10::Error& error) {
      return failure(error.what_without_backtrace());
    } catch (const std::exception& error) {
      // ATen's conversions throw std::runtime_error (a memset value a
      // float16 tile cannot hold).
      return failure(error.what());
    }
  }
  return absl::OkStatus();
}

}  // namespace neuron::rtd::nki

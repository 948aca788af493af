#include "daemon/hal/sim/nki/internal/machine.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>

#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"
#include "daemon/hal/sim/nki/internal/float8_e4m3.h"

namespace neuron::rtd::nki::internal {
namespace {

bool IsCustom(int32_t dtype) { return dtype == kNkiFloat8E4m3; }

at::TensorOptions StorageOptions(int32_t dtype) {
  const at::ScalarType type =
      IsCustom(dtype) ? at::kByte : static_cast<at::ScalarType>(dtype);
  return at::TensorOptions().dtype(type).device(at::kCPU);
}

double Identity(NkiAluOp op) {
  switch (op) {
    case NkiAluOp::kMultiply:
      return 1.0;
    case NkiAluOp::kMaximum:
      return -std::numeric_limits<double>::infinity();
    case NkiAluOp::kMinimum:
      return std::numeric_limits<double>::infinity();
    default:
      return 0.0;
  }
}

}  // namespace

float RoundToFloat(double value) {
  // Past float32's largest value by half a step or more: infinity (a cast
  // of such a double is undefined behaviour in C++).
  constexpr double kLargest = std::numeric_limits<float>::max();
  constexpr double kHalfStep = 0x1p103;  // half of float32's step at its largest exponent
  if (std::isfinite(value) && std::fabs(value) >= kLargest) {
    const float sign = value > 0 ? 1.0f : -1.0f;
    return sign * (std::fabs(value) < kLargest + kHalfStep ? std::numeric_limits<float>::max()
                                                           : std::numeric_limits<float>::infinity());
  }
  return static_cast<float>(value);
}

at::Tensor FloatImmediate(double value) {
  return at::scalar_tensor(static_cast<double>(RoundToFloat(value)), at::kFloat);
}

Accumulator::Accumulator(int64_t partitions)
    : values_(at::full({partitions}, std::numeric_limits<float>::quiet_NaN(), at::kFloat)) {}

at::Tensor Accumulator::Apply(const std::vector<bool>& flags, size_t first_flag, NkiAluOp op,
                              const at::Tensor& values, const at::Tensor& init) {
  auto flag = [&](size_t k) { return flags.size() > first_flag + k && flags[first_flag + k]; };
  const int64_t partitions = values.size(0);
  TORCH_CHECK(partitions <= values_.size(0), "an accumulator of ", values_.size(0),
              " partitions for ", partitions);
  at::Tensor lanes = values_.narrow(0, 0, partitions);
  if (flag(0)) lanes.fill_(Identity(op));
  if (flag(2)) lanes.copy_(init.reshape({partitions}));
  if (flag(1)) {
    switch (op) {
      case NkiAluOp::kAdd:
        lanes.add_(values);
        break;
      case NkiAluOp::kSubtract:
        lanes.sub_(values);
        break;
      case NkiAluOp::kMultiply:
        lanes.mul_(values);
        break;
      case NkiAluOp::kMaximum:
        at::maximum_out(lanes, lanes, values);
        break;
      case NkiAluOp::kMinimum:
        at::minimum_out(lanes, lanes, values);
        break;
      default:
        TORCH_CHECK(false, "an accumulator reduces with add, subtract, multiply, maximum or "
                           "minimum, not ",
                    std::string(NkiAluOpName(op)));
    }
  }
  return lanes.clone();
}

Machine::Machine(const NkiKernelPlan& plan, std::span<const NkiHbmBuffer> hbm,
                 NkiCoreMemory& memory)
    : plan_(plan),
      hbm_(hbm),
      memory_(memory),
      scalar_accumulator_(plan.target.partitions),
      vector_accumulator_(plan.target.partitions) {}

absl::Status Machine::CheckBuffers() const {
  for (const NkiAllocation& allocation : plan_.allocations) {
    if (allocation.space != NkiSpace::kHbm) continue;
    const uint64_t needed =
        static_cast<uint64_t>(allocation.elements) * NkiElementBytes(allocation.dtype);
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

void Machine::PoisonTilesReadBeforeWritten() {
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
    if (IsCustom(allocation.dtype)) {
      tile.fill_(0x7F);  // NaN
    } else if (at::isFloatingType(tile.scalar_type())) {
      tile.fill_(std::numeric_limits<float>::quiet_NaN());
    } else {
      tile.fill_(4);
    }
  }
}

void Machine::Execute(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  switch (instruction.opcode) {
    case NkiOpcode::kDmaCopy:
    case NkiOpcode::kDmaTranspose:
    case NkiOpcode::kTensorCopy:
      return Copy(*operands[0], *operands[1]);
    case NkiOpcode::kMemset:
      return Fill(*operands[0], instruction.scalars[0]);
    case NkiOpcode::kTensorTensor:
      return TensorTensor(instruction);
    case NkiOpcode::kTensorScalar:
      return TensorScalar(instruction);
    case NkiOpcode::kActivation:
      return Activation(instruction);
    case NkiOpcode::kMatmul:
      return Matmul(instruction);
    case NkiOpcode::kTranspose: {
      const at::Tensor source = View(*operands[1]);
      at::Tensor destination = View(*operands[0]);
      TORCH_CHECK(destination.numel() == source.numel(), "the destination has ",
                  destination.numel(), " elements; the source ", source.numel());
      TORCH_CHECK(!IsCustom(DtypeOf(*operands[0])) && !IsCustom(DtypeOf(*operands[1])),
                  "nc_transpose of float8_e4m3 tiles");
      destination.copy_(source.reshape({source.size(0), -1}).t().reshape(destination.sizes()));
      return;
    }
    case NkiOpcode::kTensorReduce:
      return TensorReduce(instruction);
    case NkiOpcode::kIota:
      return Iota(instruction);
    case NkiOpcode::kTensorCopyPredicated:
      return CopyPredicated(instruction);
    case NkiOpcode::kTensorTensorScan:
      return TensorTensorScan(instruction);
    case NkiOpcode::kTensorScalarCumulative:
      return TensorScalarCumulative(instruction);
    case NkiOpcode::kTensorPartitionReduce:
      return TensorPartitionReduce(instruction);
    case NkiOpcode::kScalarTensorTensor:
      return ScalarTensorTensor(instruction);
    case NkiOpcode::kTensorScalarReduce:
      return TensorScalarReduce(instruction);
    case NkiOpcode::kAffineSelect:
      return AffineSelect(instruction);
    case NkiOpcode::kRangeSelect:
      return RangeSelect(instruction);
    case NkiOpcode::kSelectReduce:
      return SelectReduce(instruction);
    case NkiOpcode::kBnStats:
      return BnStats(instruction);
    case NkiOpcode::kBnAggr:
      return BnAggr(instruction);
    case NkiOpcode::kMax8:
      return Max8(instruction);
    case NkiOpcode::kFindIndex8:
      return FindIndex8(instruction);
    case NkiOpcode::kMatchReplace8:
      return MatchReplace8(instruction);
    case NkiOpcode::kStreamShuffle:
      return StreamShuffle(instruction);
    case NkiOpcode::kLocalGather:
      return LocalGather(instruction);
    case NkiOpcode::kNGather:
      return NGather(instruction);
    case NkiOpcode::kSequenceBounds:
      return SequenceBounds(instruction);
    case NkiOpcode::kRandom:
      return Random(instruction);
    case NkiOpcode::kDropout:
      return Dropout(instruction);
    case NkiOpcode::kSetRandomSeed:
      return SetRandomSeed(instruction);
    case NkiOpcode::kExponential:
      return Exponential(instruction);
    case NkiOpcode::kNonzeroWithCount:
      return NonzeroWithCount(instruction);
    case NkiOpcode::kDmaCompute:
      return DmaCompute(instruction);
    case NkiOpcode::kCount:
      break;
  }
  TORCH_CHECK(false, "unknown opcode");
}

bool Machine::IsPureWrite(const NkiInstruction& instruction, size_t i) {
  if (!NkiWritesOperand(instruction, i)) return false;
  if (i != 0) return true;
  switch (instruction.opcode) {
    case NkiOpcode::kMatmul:
      return instruction.flags.empty() || !instruction.flags[0];
    case NkiOpcode::kTensorCopyPredicated:
    case NkiOpcode::kStreamShuffle:
    case NkiOpcode::kNonzeroWithCount:
      return false;
    default:
      return true;
  }
}

bool Machine::CoversAllocation(const NkiAccess& access) const {
  const NkiAllocation& allocation = plan_.allocations[access.allocation];
  if (access.offset != 0 || access.dims[0].count != allocation.partitions) return false;
  int64_t step = 1;
  for (size_t k = access.dims.size(); k-- > 1;) {
    if (access.dims[k].count != 1 && access.dims[k].stride != step) return false;
    step *= access.dims[k].count;
  }
  return step == allocation.free_elements;
}

at::Tensor Machine::Whole(const NkiAllocation& allocation) {
  const int64_t row = RowStride(allocation);
  return at::from_blob(TileStart(allocation), {allocation.partitions, allocation.free_elements},
                       {row, 1}, StorageOptions(allocation.dtype));
}

int64_t Machine::RowStride(const NkiAllocation& allocation) const {
  const uint64_t bytes = allocation.space == NkiSpace::kSbuf
                             ? memory_.target().sbuf_partition_bytes
                             : memory_.target().psum_partition_bytes;
  return static_cast<int64_t>(bytes / NkiElementBytes(allocation.dtype));
}

uint8_t* Machine::TileStart(const NkiAllocation& allocation) {
  const bool sbuf = allocation.space == NkiSpace::kSbuf;
  const uint64_t partition_bytes =
      sbuf ? memory_.target().sbuf_partition_bytes : memory_.target().psum_partition_bytes;
  uint8_t* base = sbuf ? memory_.sbuf() : memory_.psum();
  return base + allocation.partition_start * partition_bytes + allocation.byte_offset;
}

at::Tensor Machine::View(const NkiAccess& access) {
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
                      StorageOptions(allocation.dtype));
    return whole.as_strided(sizes, strides, access.offset);
  }
  // A dimension that walks partitions strides by whole rows of the core's
  // memory (CheckNkiKernel made sure each walks partitions or stays inside
  // one).
  const int64_t free = allocation.free_elements;
  const int64_t row = RowStride(allocation);
  for (size_t k = 0; k < strides.size(); ++k) {
    if (strides[k] % free == 0) strides[k] = strides[k] / free * row;
  }
  const int64_t offset = access.offset / free * row + access.offset % free;
  return Whole(allocation).as_strided(sizes, strides, offset);
}

int32_t Machine::DtypeOf(const NkiAccess& access) const {
  return plan_.allocations[access.allocation].dtype;
}

at::Tensor Machine::Read(const NkiAccess& access) {
  const at::Tensor view = View(access);
  if (IsCustom(DtypeOf(access))) return DecodeFloat8E4m3(view);
  return view.to(at::kFloat);
}

at::Tensor Machine::ReadInteger(const NkiAccess& access) {
  const at::Tensor view = View(access);
  TORCH_CHECK(!at::isFloatingType(view.scalar_type()) && !IsCustom(DtypeOf(access)),
              "a bit operator reads integer tiles, not ", view.scalar_type());
  return view.to(at::kLong);
}

at::Tensor Machine::ReadRows(const NkiAccess& access) {
  const at::Tensor values = Read(access);
  return values.reshape({values.size(0), -1});
}

void Machine::Write(const NkiAccess& access, const at::Tensor& value) {
  at::Tensor destination = View(access);
  TORCH_CHECK(destination.numel() == value.numel(), "the destination has ", destination.numel(),
              " elements; the value ", value.numel());
  const at::Tensor shaped =
      destination.sizes().equals(value.sizes()) ? value : value.reshape(destination.sizes());
  if (IsCustom(DtypeOf(access))) {
    destination.copy_(EncodeFloat8E4m3(shaped));
  } else {
    destination.copy_(shaped);
  }
}

void Machine::Copy(const NkiAccess& dst, const NkiAccess& src) {
  if (dst.indirect || src.indirect) {
    at::Tensor values = src.indirect ? Gather(src) : View(src);
    if (DtypeOf(dst) != DtypeOf(src)) {
      // Between dtypes through float32 (custom ones decoded and encoded).
      const at::Tensor real = IsCustom(DtypeOf(src)) ? DecodeFloat8E4m3(values) : values.to(at::kFloat);
      values = IsCustom(DtypeOf(dst)) ? EncodeFloat8E4m3(real)
                                      : real.to(StorageOptions(DtypeOf(dst)).dtype());
    }
    if (dst.indirect) {
      Scatter(dst, values, /*accumulate=*/false);
    } else {
      at::Tensor destination = View(dst);
      TORCH_CHECK(destination.numel() == values.numel(), "the destination has ",
                  destination.numel(), " elements; the source ", values.numel());
      destination.copy_(values.reshape(destination.sizes()));
    }
    return;
  }
  if (IsCustom(DtypeOf(dst)) || IsCustom(DtypeOf(src))) {
    if (DtypeOf(dst) == DtypeOf(src)) {
      at::Tensor destination = View(dst);
      const at::Tensor source = View(src);
      TORCH_CHECK(destination.numel() == source.numel(), "the destination has ",
                  destination.numel(), " elements; the source ", source.numel());
      destination.copy_(source.reshape(destination.sizes()));
    } else {
      Write(dst, Read(src));
    }
    return;
  }
  at::Tensor destination = View(dst);
  const at::Tensor source = View(src);
  TORCH_CHECK(destination.numel() == source.numel(), "the destination has ",
              destination.numel(), " elements; the value ", source.numel());
  // A copy whose source and destination overlap in part reads the source
  // whole first (a DMA moves through its queue's buffers).
  const at::MemOverlapStatus overlap = at::get_overlap_status(destination, source);
  const at::Tensor value = overlap == at::MemOverlapStatus::Partial ? source.clone() : source;
  destination.copy_(value.sizes().equals(destination.sizes())
                        ? value
                        : value.reshape(destination.sizes()));
}

void Machine::Fill(const NkiAccess& dst, double value) {
  at::Tensor destination = View(dst);
  if (IsCustom(DtypeOf(dst))) {
    destination.fill_(static_cast<int64_t>(EncodeFloat8E4m3(RoundToFloat(value))));
  } else if (at::isFloatingType(destination.scalar_type())) {
    // Rounded, not refused, when past the dtype's range.
    destination.fill_(FloatImmediate(value).to(destination.scalar_type()));
  } else {
    destination.fill_(value);
  }
}

at::Tensor Machine::IndirectOffsets(const NkiAccess& access) {
  const NkiIndirect& indirect = *access.indirect;
  const NkiAllocation& allocation = plan_.allocations[access.allocation];
  const int64_t dims = static_cast<int64_t>(access.dims.size());
  std::vector<int64_t> sizes;
  for (const NkiDim& dim : access.dims) sizes.push_back(dim.count);
  at::Tensor offsets = at::full({}, access.offset, at::kLong);
  for (int64_t k = 0; k < dims; ++k) {
    std::vector<int64_t> along(dims, 1);
    along[k] = access.dims[k].count;
    offsets = offsets + (at::arange(access.dims[k].count, at::kLong) * access.dims[k].stride).view(along);
  }
  const NkiAccess index_access{.allocation = indirect.allocation, .offset = indirect.offset,
                               .dims = indirect.dims, .indirect = std::nullopt};
  const at::Tensor index = ReadInteger(index_access).reshape(-1);
  // Each index keeps index * stride inside the tensor (and inside 64 bits).
  const int64_t largest = (allocation.elements - 1) / indirect.stride;
  TORCH_CHECK(index.numel() == 0 ||
                  (index.min().item<int64_t>() >= 0 && index.max().item<int64_t>() <= largest),
              "an indirect index of HBM tensor '", allocation.name, "' is outside it (indices 0 to ",
              largest, ")");
  if (indirect.dim < 0) {
    offsets = offsets + index[0] * indirect.stride;
  } else {
    std::vector<int64_t> along(dims, 1);
    along[indirect.dim] = index.numel();
    offsets = offsets + (index * indirect.stride).view(along);
  }
  offsets = offsets.expand(sizes);
  TORCH_CHECK(offsets.numel() == 0 ||
                  (offsets.min().item<int64_t>() >= 0 &&
                   offsets.max().item<int64_t>() < allocation.elements),
              "an indirect access of HBM tensor '", allocation.name, "' reaches past its ",
              allocation.elements, " elements");
  return offsets.contiguous();
}

at::Tensor Machine::Gather(const NkiAccess& access) {
  const NkiAllocation& allocation = plan_.allocations[access.allocation];
  const at::Tensor whole = at::from_blob(hbm_[allocation.address_index].data,
                                         {allocation.elements}, StorageOptions(allocation.dtype));
  const at::Tensor offsets = IndirectOffsets(access);
  return whole.index_select(0, offsets.reshape(-1)).reshape(offsets.sizes());
}

at::Tensor Machine::GatherValues(const NkiAccess& access) {
  const at::Tensor raw = Gather(access);
  return IsCustom(DtypeOf(access)) ? DecodeFloat8E4m3(raw) : raw.to(at::kFloat);
}

void Machine::Scatter(const NkiAccess& access, const at::Tensor& values, bool accumulate) {
  const NkiAllocation& allocation = plan_.allocations[access.allocation];
  at::Tensor whole = at::from_blob(hbm_[allocation.address_index].data, {allocation.elements},
                                   StorageOptions(allocation.dtype));
  const at::Tensor offsets = IndirectOffsets(access).reshape(-1);
  TORCH_CHECK(values.numel() == offsets.numel(), "the indirect destination has ",
              offsets.numel(), " elements; the value ", values.numel());
  whole.index_put_({offsets}, values.reshape(-1).to(whole.scalar_type()), accumulate);
}

at::Tensor Machine::Column(const std::optional<NkiAccess>& tile, double immediate,
                           int64_t partitions) {
  if (!tile) return FloatImmediate(immediate).expand({partitions, 1});
  const at::Tensor values = Read(*tile);
  TORCH_CHECK(values.numel() == partitions, "a per-partition operand has ", values.numel(),
              " elements for ", partitions, " partitions");
  return values.reshape({partitions, 1});
}

}  // namespace neuron::rtd::nki::internal

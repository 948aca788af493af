// The engines' arithmetic instructions: elementwise (tensor_tensor,
// tensor_scalar, scalar_tensor_tensor, activation, exponential), reductions
// (along the free dimensions, across partitions, the engines'
// accumulators, batch-norm statistics), scans, matmul and dma_compute.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "daemon/hal/sim/nki/internal/arithmetic.h"
#include "daemon/hal/sim/nki/internal/machine.h"

namespace neuron::rtd::nki::internal {
namespace {

std::vector<int64_t> FreeDims(const at::Tensor& tensor) {
  std::vector<int64_t> dims;
  for (int64_t k = 1; k < tensor.dim(); ++k) dims.push_back(k);
  return dims;
}

// op(a, b) with the operands swapped when `reverse`.
at::Tensor Apply(NkiAluOp op, const at::Tensor& a, const at::Tensor& b, bool reverse) {
  return reverse ? Alu(op, b, a) : Alu(op, a, b);
}

bool Flag(const NkiInstruction& instruction, size_t i) {
  return instruction.flags.size() > i && instruction.flags[i];
}

// Writes op(a, b) straight into `destination` (computed in float32, rounded
// once on the write) where ATen has an out= form and the shapes agree;
// false otherwise.
bool AluInto(NkiAluOp op, const at::Tensor& a, const at::Tensor& b, at::Tensor& destination) {
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

}  // namespace

void Machine::TensorTensor(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  const NkiAluOp op = instruction.alu[0];
  if (IsBitOperator(op)) {
    const at::Tensor a = ReadInteger(*operands[1]);
    const at::Tensor b = ReadInteger(*operands[2]);
    TORCH_CHECK(a.numel() == b.numel(), "data1 has ", a.numel(), " elements and data2 ",
                b.numel());
    Write(*operands[0], Alu(op, a, b.reshape(a.sizes())));
    return;
  }
  const at::Tensor data1 = Read(*operands[1]);
  const at::Tensor data2 = Read(*operands[2]);
  TORCH_CHECK(data1.numel() == data2.numel(), "data1 has ", data1.numel(), " elements and data2 ",
              data2.numel());
  at::Tensor destination = View(*operands[0]);
  if (DtypeOf(*operands[0]) == static_cast<int32_t>(at::kFloat) &&
      AluInto(op, data1, data2.reshape(data1.sizes()), destination)) {
    return;
  }
  Write(*operands[0], Alu(op, data1, data2.reshape(data1.sizes())));
}

void Machine::TensorScalar(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  const bool bits = IsBitOperator(instruction.alu[0]) ||
                    (instruction.alu[1] != NkiAluOp::kCount && IsBitOperator(instruction.alu[1]));
  at::Tensor result = bits ? ReadInteger(*operands[1]) : Read(*operands[1]);
  const int64_t partitions = result.size(0);
  for (size_t i = 0; i < 2; ++i) {
    if (instruction.alu[i] == NkiAluOp::kCount) continue;
    at::Tensor operand = Column(operands[2 + i], instruction.scalars[i], partitions);
    std::vector<int64_t> shape(result.dim(), 1);
    shape[0] = partitions;
    operand = operand.reshape(shape);
    if (bits) operand = operand.to(at::kLong);
    result = Apply(instruction.alu[i], result, operand, Flag(instruction, i));
  }
  Write(*operands[0], result);
}

void Machine::Activation(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  at::Tensor x = Read(*operands[1]);
  const int64_t partitions = x.size(0);
  std::vector<int64_t> column(x.dim(), 1);
  column[0] = partitions;
  if (operands[3] || instruction.scalars[0] != 1.0) {
    x = x * Column(operands[3], instruction.scalars[0], partitions).reshape(column);
  }
  if (operands[2]) x = x + Column(operands[2], 0, partitions).reshape(column);
  const at::Tensor y = Activate(instruction.activation, x);
  Write(*operands[0], y);
  const bool commanded = !instruction.flags.empty();
  if (!operands[4] && !commanded) return;
  const NkiAluOp op = instruction.alu[0] == NkiAluOp::kCount ? NkiAluOp::kAdd : instruction.alu[0];
  const at::Tensor reduced = Reduce(op, y, FreeDims(y)).reshape({partitions});
  // Without a reduce command, reduce_res receives this instruction's
  // reduction alone (reset, then reduce).
  const std::vector<bool> fresh = {true, true, false};
  const at::Tensor accumulated = scalar_accumulator_.Apply(
      commanded ? instruction.flags : fresh, 0, op, reduced, reduced);
  if (operands[4]) Write(*operands[4], accumulated);
}

void Machine::Matmul(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  if (Flag(instruction, 1)) {
    // Transpose mode: moving is the identity; stationary's values move
    // through exactly.
    const at::Tensor source = View(*operands[1]);
    at::Tensor destination = View(*operands[0]);
    TORCH_CHECK(destination.numel() == source.numel(), "the destination has ",
                destination.numel(), " elements; the transpose ", source.numel());
    destination.copy_(source.reshape({source.size(0), -1}).t().reshape(destination.sizes()));
    return;
  }
  const at::Tensor stationary = Read(*operands[1]);
  const at::Tensor moving = Read(*operands[2]);
  // Double-row mode contracts two rows per partition ([K, 2, M] and
  // [K, 2, N]).
  const int64_t rows = Flag(instruction, 2) ? 2 : 1;
  const int64_t contraction = stationary.size(0) * rows;
  TORCH_CHECK(moving.size(0) * rows == contraction, "stationary has ", stationary.size(0),
              " partitions and moving ", moving.size(0));
  const at::Tensor product =
      stationary.reshape({contraction, -1}).t().mm(moving.reshape({contraction, -1}));
  at::Tensor destination = View(*operands[0]);
  TORCH_CHECK(destination.numel() == product.numel(), "the destination has ",
              destination.numel(), " elements; the product [", product.size(0), ", ",
              product.size(1), "] has ", product.numel());
  if (Flag(instruction, 0)) {
    destination.add_(product.reshape(destination.sizes()));
  } else {
    destination.copy_(product.reshape(destination.sizes()));
  }
}

void Machine::TensorReduce(const NkiInstruction& instruction) {
  const at::Tensor data = Read(*instruction.operands[1]);
  at::Tensor result = Reduce(instruction.alu[0], data, instruction.axes);
  if (Flag(instruction, 0)) result = result.neg();
  Write(*instruction.operands[0], result);
}

void Machine::TensorTensorScan(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  const at::Tensor data0 = ReadRows(*operands[1]);
  const at::Tensor data1 = ReadRows(*operands[2]);
  TORCH_CHECK(data0.sizes().equals(data1.sizes()), "data0 ", data0.sizes(), " and data1 ",
              data1.sizes(), " differ");
  const int64_t partitions = data0.size(0);
  at::Tensor carried = Column(operands[3], instruction.scalars[0], partitions).reshape({partitions});
  at::Tensor result = at::empty_like(data0);
  for (int64_t i = 0; i < data0.size(1); ++i) {
    const at::Tensor mixed =
        Apply(instruction.alu[0], data0.select(1, i), carried, Flag(instruction, 0));
    carried = Apply(instruction.alu[1], mixed, data1.select(1, i), Flag(instruction, 1));
    result.select(1, i).copy_(carried);
  }
  Write(*operands[0], result);
}

void Machine::TensorScalarCumulative(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  const at::Tensor source = ReadRows(*operands[1]);
  const int64_t partitions = source.size(0);
  const at::Tensor scaled = Alu(instruction.alu[0], source,
                                Column(operands[2], instruction.scalars[0], partitions));
  const at::Tensor init = Column(operands[3], instruction.scalars[1], partitions);
  // The command's reset and load happen once, before the first element.
  at::Tensor carried = vector_accumulator_.Apply(
      {Flag(instruction, 0), false, Flag(instruction, 2)}, 0, instruction.alu[1],
      at::zeros({partitions}, at::kFloat), init);
  at::Tensor result = at::empty_like(scaled);
  for (int64_t i = 0; i < scaled.size(1); ++i) {
    carried = Alu(instruction.alu[1], scaled.select(1, i), carried);
    result.select(1, i).copy_(carried);
  }
  vector_accumulator_.Apply({false, false, true}, 0, instruction.alu[1], carried, carried);
  Write(*operands[0], result);
}

void Machine::TensorPartitionReduce(const NkiInstruction& instruction) {
  const at::Tensor data = ReadRows(*instruction.operands[1]);
  const NkiAluOp op = instruction.alu[0];
  at::Tensor result;
  if (IsBitOperator(op)) {
    result = Reduce(op, ReadInteger(*instruction.operands[1]).reshape({data.size(0), -1}), {0});
  } else {
    result = Reduce(op, data, {0});
  }
  Write(*instruction.operands[0], result);
}

void Machine::ScalarTensorTensor(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  const at::Tensor data = ReadRows(*operands[1]);
  const at::Tensor operand0 = Column(operands[2], instruction.scalars[0], data.size(0));
  const at::Tensor operand1 = ReadRows(*operands[3]);
  TORCH_CHECK(operand1.numel() == data.numel(), "operand1 has ", operand1.numel(),
              " elements; data ", data.numel());
  const at::Tensor first = Apply(instruction.alu[0], data, operand0, Flag(instruction, 0));
  Write(*operands[0], Apply(instruction.alu[1], first, operand1.reshape(first.sizes()),
                            Flag(instruction, 1)));
}

void Machine::TensorScalarReduce(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  const at::Tensor data = ReadRows(*operands[1]);
  const int64_t partitions = data.size(0);
  const at::Tensor result = Apply(instruction.alu[0], data,
                                  Column(operands[2], instruction.scalars[0], partitions),
                                  Flag(instruction, 0));
  Write(*operands[0], result);
  const at::Tensor reduced = Reduce(instruction.alu[1], result, {1}).reshape({partitions});
  const at::Tensor init = Column(operands[4], instruction.scalars[1], partitions);
  at::Tensor accumulated =
      vector_accumulator_.Apply(instruction.flags, 2, instruction.alu[1], reduced, init);
  if (operands[3]) Write(*operands[3], Flag(instruction, 1) ? accumulated.neg() : accumulated);
}

void Machine::Exponential(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  const at::Tensor source = ReadRows(*operands[1]);
  const int64_t partitions = source.size(0);
  const at::Tensor result =
      (source - Column(operands[2], instruction.scalars[0], partitions)).exp();
  Write(*operands[0], result);
  const at::Tensor init = Column(operands[4], instruction.scalars[1], partitions);
  const at::Tensor accumulated = vector_accumulator_.Apply(
      instruction.flags, 0, NkiAluOp::kAdd, result.sum(1), init);
  if (operands[3]) Write(*operands[3], accumulated);
}

void Machine::BnStats(const NkiInstruction& instruction) {
  const at::Tensor x = ReadRows(*instruction.operands[1]);
  std::vector<at::Tensor> stats;
  for (int64_t start : {0, 1}) {
    const at::Tensor half = x.slice(1, start, x.size(1), 2);
    const int64_t count = half.size(1);
    const at::Tensor mean = count > 0 ? half.mean(1) : at::zeros({x.size(0)}, at::kFloat);
    const at::Tensor m2 =
        count > 0 ? (half - mean.unsqueeze(1)).square().sum(1) : at::zeros({x.size(0)}, at::kFloat);
    stats.push_back(at::full({x.size(0)}, static_cast<double>(count), at::kFloat));
    stats.push_back(mean);
    stats.push_back(m2);
  }
  Write(*instruction.operands[0], at::stack(stats, 1));
}

void Machine::BnAggr(const NkiInstruction& instruction) {
  const at::Tensor rows = ReadRows(*instruction.operands[1]);
  TORCH_CHECK(rows.size(1) % 3 == 0, "bn_aggr reads (count, mean, variance * count) triples; ",
              rows.size(1), " values per partition");
  const at::Tensor triples = rows.reshape({rows.size(0), -1, 3});
  const at::Tensor count = triples.select(2, 0);
  const at::Tensor mean = triples.select(2, 1);
  const at::Tensor m2 = triples.select(2, 2);
  const at::Tensor total = count.sum(1);
  const at::Tensor combined_mean = (count * mean).sum(1) / total;
  const at::Tensor spread = m2 + count * (mean - combined_mean.unsqueeze(1)).square();
  Write(*instruction.operands[0], at::stack({combined_mean, spread.sum(1) / total}, 1));
}

namespace {

bool SameAccess(const NkiAccess& a, const NkiAccess& b) {
  return a.allocation == b.allocation && a.offset == b.offset && a.dims == b.dims &&
         a.indirect.has_value() == b.indirect.has_value();
}

}  // namespace

void Machine::DmaCompute(const NkiInstruction& instruction) {
  const auto& operands = instruction.operands;
  TORCH_CHECK(instruction.alu[0] == NkiAluOp::kAdd, "dma_compute reduces with add, not ",
              std::string(NkiAluOpName(instruction.alu[0])));
  const NkiAccess& dst = *operands[0];
  // An indirect destination among the sources is a read-modify-write: the
  // others are added to it at its offsets (repeated offsets add twice).
  const bool accumulate =
      dst.indirect && std::any_of(operands.begin() + 1, operands.end(), [&](const auto& operand) {
        return operand && SameAccess(*operand, dst);
      });
  at::Tensor total;
  for (size_t i = 1; i < operands.size(); ++i) {
    if (!operands[i] || (accumulate && SameAccess(*operands[i], dst))) continue;
    const at::Tensor source = operands[i]->indirect ? GatherValues(*operands[i])
                                                    : Read(*operands[i]);
    total = total.defined() ? total + source.reshape(total.sizes()) : source;
  }
  if (dst.indirect) {
    Scatter(dst, total, accumulate);
  } else {
    Write(dst, total);
  }
}

}  // namespace neuron::rtd::nki::internal

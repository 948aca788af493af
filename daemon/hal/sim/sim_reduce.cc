// The simulated collective engine: ATen CPU kernels over the HBM of the
// ranks' devices, in place.
#include <ATen/ATen.h>

#include <vector>

#include "absl/strings/str_format.h"
#include "daemon/hal/sim/aten_kernels.h"
#include "daemon/hal/sim/aten_memory.h"
#include "daemon/hal/sim/sim_device.h"

namespace neuron::rtd::hal::sim {
namespace {

at::ScalarType AtenType(ElementType type) {
  switch (type) {
    case ElementType::kFloat32:
      return at::kFloat;
    case ElementType::kBFloat16:
      return at::kBFloat16;
    case ElementType::kFloat16:
      return at::kHalf;
    case ElementType::kInt8:
      return at::kChar;
    case ElementType::kUInt8:
      return at::kByte;
    case ElementType::kInt32:
      return at::kInt;
    case ElementType::kInt64:
      return at::kLong;
    case ElementType::kBool:
      return at::kBool;
  }
  return at::kFloat;
}

// Folds `operand` into `accumulator` (which holds the first operands).
void Accumulate(ReduceOp op, at::Tensor& accumulator, const at::Tensor& operand, double scale) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      accumulator.add_(operand);
      return;
    case ReduceOp::kPremulSum:
      accumulator.add_(operand, scale);
      return;
    case ReduceOp::kProduct:
      accumulator.mul_(operand);
      return;
    case ReduceOp::kMin:
      at::minimum_out(accumulator, accumulator, operand);
      return;
    case ReduceOp::kMax:
      at::maximum_out(accumulator, accumulator, operand);
      return;
  }
}

}  // namespace

absl::Status ReduceInArenas(const Reduction& reduction, HbmArena& destination_arena,
                            uint64_t destination, std::span<const ArenaOperand> sources) {
  if (sources.empty()) return absl::InvalidArgumentError("a reduction needs a source");
  const at::ScalarType dtype = AtenType(reduction.type);
  const bool floating = at::isFloatingType(dtype);
  if (reduction.op == ReduceOp::kPremulSum && !floating) {
    return absl::InvalidArgumentError("PREMUL_SUM reduces floating-point tensors only");
  }
  const auto count = static_cast<int64_t>(reduction.count);
  absl::StatusOr<at::Tensor> out = WrapHbm(destination_arena, destination, {count}, dtype);
  if (!out.ok()) return out.status();
  std::vector<at::Tensor> inputs;
  inputs.reserve(sources.size());
  for (const ArenaOperand& source : sources) {
    absl::StatusOr<at::Tensor> input = WrapHbm(*source.arena, source.address, {count}, dtype);
    if (!input.ok()) return input.status();
    inputs.push_back(*std::move(input));
  }
  try {
    at::Tensor& result = *out;
    const bool sums = reduction.op == ReduceOp::kSum || reduction.op == ReduceOp::kAvg;
    size_t next = 1;
    if (reduction.op == ReduceOp::kPremulSum) {
      at::mul_out(result, inputs[0], reduction.scale);
    } else if (sums && inputs.size() > 1) {
      at::add_out(result, inputs[0], inputs[1]);
      next = 2;
    } else if (destination != sources[0].address || sources[0].arena != &destination_arena) {
      result.copy_(inputs[0]);
    }
    for (size_t i = next; i < inputs.size(); ++i) {
      Accumulate(reduction.op, result, inputs[i], reduction.scale);
    }
    if (reduction.op == ReduceOp::kAvg) {
      const auto ranks = static_cast<int64_t>(inputs.size());
      if (floating) {
        result.div_(ranks);
      } else if (dtype == at::kBool) {
        return absl::InvalidArgumentError("AVG does not reduce bool tensors");
      } else {
        result.div_(ranks, "trunc");
      }
    }
  } catch (const c10::Error& error) {
    return absl::InternalError(absl::StrFormat("%s reduction of %d %s elements failed: %s",
                                               ReduceOpName(reduction.op), reduction.count,
                                               c10::toString(dtype), error.what_without_backtrace()));
  }
  return absl::OkStatus();
}

absl::Status SimDevice::Reduce(const Reduction& reduction, uint64_t destination,
                               std::span<const ReduceOperand> sources) {
  std::vector<ArenaOperand> operands;
  operands.reserve(sources.size());
  for (const ReduceOperand& source : sources) {
    auto* device = dynamic_cast<SimDevice*>(source.device);
    if (device == nullptr) {
      return absl::InvalidArgumentError("a reduction between devices of different backends");
    }
    operands.push_back(ArenaOperand{.arena = &device->arena(), .address = source.address});
  }
  return ReduceInArenas(reduction, *arena_, destination, operands);
}

}  // namespace neuron::rtd::hal::sim

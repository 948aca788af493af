#include "daemon/exec/nki_kernel_decoder.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_format.h"

namespace neuron::rtd::exec {
namespace {

namespace v1 = neuron::rtd::v1;

absl::Status Invalid(std::string_view kernel, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrFormat("NKI kernel '%s': %s", kernel.substr(0, kNkiMaxStringBytes), what));
}

std::vector<hal::NkiDim> ToDims(const v1::NkiAccess& access) {
  std::vector<hal::NkiDim> dims;
  const int count = std::min(access.strides_size(), access.counts_size());
  for (int k = 0; k < count; ++k) {
    dims.push_back(hal::NkiDim{.stride = access.strides(k), .count = access.counts(k)});
  }
  return dims;
}

hal::NkiAccess ToAccess(const v1::NkiAccess& access) {
  hal::NkiAccess decoded{.allocation = access.allocation(), .offset = access.offset(),
                         .dims = ToDims(access), .indirect = std::nullopt};
  if (access.has_indirect()) {
    // The index's own indirect field is ignored: an index is a plain access.
    const v1::NkiIndirect& indirect = access.indirect();
    decoded.indirect = hal::NkiIndirect{.allocation = indirect.index().allocation(),
                                        .offset = indirect.index().offset(),
                                        .dims = ToDims(indirect.index()),
                                        .dim = indirect.dim(),
                                        .stride = indirect.stride()};
  }
  return decoded;
}

absl::StatusOr<hal::NkiInstruction> ToInstruction(const v1::NkiInstruction& instruction,
                                                  int index) {
  const std::string where = absl::StrFormat("instruction %d", index);
  hal::NkiInstruction decoded;
  const std::optional<hal::NkiOpcode> opcode = NkiOpcodeNamed(instruction.opcode());
  if (!opcode) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: unknown opcode '%s'", where, instruction.opcode().substr(0, kNkiMaxStringBytes)));
  }
  decoded.opcode = *opcode;
  // Bounds before copying; CheckNkiKernel checks the exact counts.
  if (static_cast<size_t>(instruction.operands_size()) > kNkiMaxOperands ||
      static_cast<size_t>(instruction.alu_size()) > kNkiMaxAluOps ||
      static_cast<size_t>(instruction.scalars_size()) > kNkiMaxScalars ||
      static_cast<size_t>(instruction.flags_size()) > kNkiMaxFlags ||
      static_cast<size_t>(instruction.axes_size()) > kNkiMaxAxes) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: too many fields", where));
  }
  for (const v1::NkiOperand& operand : instruction.operands()) {
    if (!operand.has_access()) {
      decoded.operands.emplace_back(std::nullopt);
      continue;
    }
    const v1::NkiAccess& access = operand.access();
    const v1::NkiAccess& offsets = access.indirect().index();
    if (access.strides_size() != access.counts_size() ||
        offsets.strides_size() != offsets.counts_size() ||
        static_cast<size_t>(access.strides_size()) > kNkiMaxAccessDims ||
        static_cast<size_t>(offsets.strides_size()) > kNkiMaxAccessDims) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: an access's strides and counts differ in number, or exceed %d", where,
          kNkiMaxAccessDims));
    }
    decoded.operands.emplace_back(ToAccess(operand.access()));
  }
  for (const std::string& name : instruction.alu()) {
    if (name.empty()) {
      decoded.alu.push_back(hal::NkiAluOp::kCount);
      continue;
    }
    const std::optional<hal::NkiAluOp> op = NkiAluOpNamed(name);
    if (!op) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: unknown operator '%s'", where, name.substr(0, kNkiMaxStringBytes)));
    }
    decoded.alu.push_back(*op);
  }
  const std::optional<hal::NkiActivation> activation =
      NkiActivationNamed(instruction.activation());
  if (!activation) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: unknown activation function '%s'", where,
                        instruction.activation().substr(0, kNkiMaxStringBytes)));
  }
  decoded.activation = *activation;
  decoded.scalars.assign(instruction.scalars().begin(), instruction.scalars().end());
  decoded.flags.assign(instruction.flags().begin(), instruction.flags().end());
  decoded.axes.assign(instruction.axes().begin(), instruction.axes().end());
  decoded.source = instruction.source();
  return decoded;
}

}  // namespace

absl::StatusOr<hal::NkiKernelPlan> DecodeNkiKernelPlan(const v1::NkiKernel& kernel) {
  const std::string& name = kernel.name();
  if (kernel.allocations_size() > static_cast<int>(kNkiMaxAllocations) ||
      kernel.instructions_size() > static_cast<int>(kNkiMaxInstructions) ||
      kernel.source_locations_size() > static_cast<int>(kNkiMaxInstructions)) {
    return Invalid(name, absl::StrFormat("%d allocations and %d instructions (at most %d and %d)",
                                         kernel.allocations_size(), kernel.instructions_size(),
                                         kNkiMaxAllocations, kNkiMaxInstructions));
  }
  hal::NkiKernelPlan plan;
  plan.name = name;
  plan.target = hal::NkiTarget{.partitions = kernel.target().partitions(),
                               .sbuf_partition_bytes = kernel.target().sbuf_partition_bytes(),
                               .psum_partition_bytes = kernel.target().psum_partition_bytes()};
  for (const v1::NkiAllocation& allocation : kernel.allocations()) {
    plan.allocations.push_back(hal::NkiAllocation{
        .space = static_cast<hal::NkiSpace>(allocation.space()),
        .dtype = static_cast<int32_t>(allocation.dtype()),
        .name = allocation.name(),
        .address_index = allocation.address_index(),
        .elements = allocation.elements(),
        .partitions = allocation.partitions(),
        .free_elements = allocation.free_elements(),
        .partition_start = allocation.partition_start(),
        .byte_offset = allocation.byte_offset(),
        .shape = {}});
    if (allocation.shape_size() > 8) return Invalid(name, "a shape of more than 8 dimensions");
    plan.allocations.back().shape.assign(allocation.shape().begin(), allocation.shape().end());
  }
  for (int i = 0; i < kernel.instructions_size(); ++i) {
    absl::StatusOr<hal::NkiInstruction> instruction = ToInstruction(kernel.instructions(i), i);
    if (!instruction.ok()) return Invalid(name, std::string(instruction.status().message()));
    plan.instructions.push_back(*std::move(instruction));
  }
  plan.source_locations.assign(kernel.source_locations().begin(),
                               kernel.source_locations().end());
  if (std::string bad = CheckNkiKernel(plan); !bad.empty()) return Invalid(name, bad);
  return plan;
}

absl::StatusOr<Executable> DecodeNkiKernel(const v1::NkiKernel& kernel) {
  absl::StatusOr<hal::NkiKernelPlan> plan = DecodeNkiKernelPlan(kernel);
  if (!plan.ok()) return plan.status();
  const std::string& name = kernel.name();
  Executable executable;
  executable.description = absl::StrFormat("NKI kernel '%s'", name);
  for (const hal::NkiAllocation& allocation : plan->allocations) {
    if (allocation.space != hal::NkiSpace::kHbm) continue;
    executable.launch_tensors.push_back(hal::TensorLayout{.dtype = allocation.dtype,
                                                          .sizes = {allocation.elements},
                                                          .strides = {1},
                                                          .address_index =
                                                              allocation.address_index});
    executable.address_count = std::max(executable.address_count, allocation.address_index + 1);
  }
  executable.spec = *std::move(plan);
  return executable;
}

}  // namespace neuron::rtd::exec

#include "daemon/hal/sim/nki/nki_interpreter.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <string>

#include "absl/strings/str_format.h"
#include "daemon/hal/sim/nki/internal/machine.h"

namespace neuron::rtd::nki {

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
  internal::Machine machine(plan, hbm, memory);
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

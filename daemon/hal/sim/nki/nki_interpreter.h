// Runs an NKI kernel plan the way a NeuronCore does, on the CPU: its
// instructions in order, tiles in the core's SBUF and PSUM, HBM tensors in
// place; each result rounded to its destination's dtype on write, matmuls
// accumulated in float32 in PSUM. One semantics for the daemon's sim backend
// (NkiExecutable) and for nki.simulate in the client, which links this
// library. Declared without PyTorch types.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_NKI_NKI_INTERPRETER_H_
#define NEURON_RTD_DAEMON_HAL_SIM_NKI_NKI_INTERPRETER_H_

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/status.h"
#include "neuron/rtd/nki_kernel.h"

namespace neuron::rtd::nki {

// The on-chip memories of one NeuronCore: SBUF and PSUM, each partitions x
// bytes per partition. Pages are committed as kernels touch them.
// Thread-safety: one kernel at a time (a core runs one).
class NkiCoreMemory {
 public:
  explicit NkiCoreMemory(const NkiTarget& target);

  // Whether kernels traced for `target` fit.
  bool Holds(const NkiTarget& target) const;
  uint8_t* sbuf() { return sbuf_.get(); }
  uint8_t* psum() { return psum_.get(); }
  const NkiTarget& target() const { return target_; }
  // The state of the core's random-number generator (xorshift64*): it
  // carries over from kernel to kernel, as a core's does, until a kernel
  // seeds it.
  uint64_t& random_state() { return random_state_; }

 private:
  NkiTarget target_;
  uint64_t random_state_ = 0x9E3779B97F4A7C15ULL;
  std::unique_ptr<uint8_t[]> sbuf_;
  std::unique_ptr<uint8_t[]> psum_;
};

// The SBUF and PSUM of the core whose worker runs on this thread (made, or
// remade, to hold `target`): a core runs one kernel at a time, and each
// core has its own worker thread.
NkiCoreMemory& ThreadCoreMemory(const NkiTarget& target);

// Host memory holding one HBM allocation's elements.
struct NkiHbmBuffer {
  void* data = nullptr;
  uint64_t bytes = 0;
};

// Runs `plan`, which CheckNkiKernel accepted, with HBM allocation i at
// `hbm[address_index]`, on `memory` (which must hold the plan's target).
// A tile read before the kernel has written all of it starts filled with
// NaN (integer tiles with 4), as new memory on AWS's simulator: a kernel
// that reads what it never wrote sees it.
// INVALID_ARGUMENT naming the instruction and its source line when an
// instruction's operands disagree (element counts, shapes);
// RESOURCE_EXHAUSTED when host memory for an instruction's temporaries runs
// out; FAILED_PRECONDITION when a buffer is missing or too small.
absl::Status RunNkiKernel(const NkiKernelPlan& plan, std::span<const NkiHbmBuffer> hbm,
                          NkiCoreMemory& memory);

}  // namespace neuron::rtd::nki

#endif  // NEURON_RTD_DAEMON_HAL_SIM_NKI_NKI_INTERPRETER_H_

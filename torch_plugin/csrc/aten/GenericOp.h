// The generic op path: any ATen operator on neuron tensors becomes a LAUNCH
// of an eager-op executable in neuron-rtd ("one NEFF per op"):
//
//   1. one pass over the arguments builds the call's signature (layouts,
//      dtypes, fixed values), its LAUNCH addresses and per-call scalars;
//   2. the signature's plan comes from a process-wide cache; on a miss the
//      operator runs on meta tensors here (output shapes and dtypes, and the
//      operator's own argument checks), and the executable is loaded into
//      the daemon (cached host-wide by content);
//   3. outputs are allocated and the LAUNCH is queued on the current stream:
//      the call returns before the daemon runs it.
//
// Functional operators run as their out= overload when one exists, so the
// daemon writes outputs in place. View operators never reach the daemon
// (metadata only). Operators with no meta kernel, or with arguments an
// executable cannot describe, run on the CPU with a one-time warning
// (FallbackOps lists them).
#ifndef TORCH_NEURONX_CSRC_ATEN_GENERIC_OP_H_
#define TORCH_NEURONX_CSRC_ATEN_GENERIC_OP_H_

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace torch_neuronx {

namespace internal {
struct OpInfo;
}  // namespace internal

// The boxed kernel registered for every operator without its own neuron
// kernel.
void NeuronFallback(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                    torch::jit::Stack* stack);

// Runs `op` in the daemon, skipping the view and CPU-fallback decisions
// (explicit kernels use it for operators they have prepared arguments for).
void LaunchOnDevice(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// As LaunchOnDevice for an operator that only writes its arguments, whose
// shapes the caller has already made right: no meta inference (for
// operators that have no meta kernel, such as nonzero.out).
void LaunchOnDeviceWithoutMeta(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// For kernels whose tensor arguments are borrowed from their caller, not
// owned (UnboxedOps.cc): launches the call and returns its new outputs, in
// return order, or nullopt when the call needs the boxed path (a CPU tensor
// among its arguments, a call to split, an operator to run on the CPU).
// `arguments` is never copied. `info` is InfoFor(op).
std::optional<std::vector<at::Tensor>> TryLaunchBorrowed(const c10::OperatorHandle& op,
                                                         const internal::OpInfo& info,
                                                         torch::jit::Stack& arguments);

// Records that a call of `qualified_name` ("aten::op.overload") runs on the
// CPU instead of the device: counted, and warned about once per operator with
// `reason`. For kernels that move a call to the CPU themselves (Sparse.cc).
void NoteCpuFallback(const std::string& qualified_name, std::string_view reason);

// "aten::op.overload" of every operator that ran on the CPU instead.
std::vector<std::string> FallbackOps();

// How many executables this process has loaded, launches it queued, and
// operator calls that ran on the CPU instead.
struct GenericOpStats {
  uint64_t executables = 0;
  uint64_t launches = 0;
  uint64_t plan_cache_hits = 0;
  uint64_t cpu_fallbacks = 0;
};
GenericOpStats GetGenericOpStats();

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_ATEN_GENERIC_OP_H_

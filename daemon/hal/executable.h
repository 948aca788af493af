// A prepared executable: what a backend made of an executable's description
// once, at load (on the sim an operator resolved and checked against its
// schema; on Trainium a NEFF loaded), so that each launch only binds device
// addresses and immediates. The HAL never sees wire formats: daemon/exec
// decodes and bounds the description, the backend prepares it.
#ifndef NEURON_RTD_DAEMON_HAL_EXECUTABLE_H_
#define NEURON_RTD_DAEMON_HAL_EXECUTABLE_H_

#include <cstdint>
#include <string>
#include <variant>

#include "daemon/hal/device_info.h"
#include "daemon/hal/eager_op.h"
#include "daemon/hal/graph.h"
#include "daemon/hal/nki_kernel.h"

namespace neuron::rtd::hal {

// The most device addresses one launch binds: the command ring's limit,
// which daemon/exec checks this equals.
inline constexpr uint32_t kMaxLaunchArguments = 3840;

// A compiled NEFF, as daemon/exec checked its container.
struct NeffPlan {
  std::string name;
  std::string bytes;
  // Physical cores per logical core it was compiled for; 0: not recorded.
  uint32_t lnc_size = 0;
};

// What an executable describes, as daemon/exec decoded it: one operator
// (eager mode), a graph of them (torch.compile), a NEFF, or an NKI kernel.
using ExecutableSpec = std::variant<EagerOpPlan, GraphPlan, NeffPlan, NkiKernelPlan>;

// Owned by daemon/exec's cache; shared by every launch that names it, from
// any core's worker, so Dispatch must not change it.
// Lifetime: outlives every Dispatch of it (the queue holds a reference while
// a launch runs); destroyed when the cache evicts it.
// How an executable has run so far (neuronctl cache ls).
struct ExecutableStatus {
  uint64_t launches = 0;
  // 0: run as described (eager ops, interpreted graphs); 1: compiled code.
  int tier = 0;
  // For graphs: "interpreted", "compiling", "compiled" or "interpreted (why
  // it is not compiled)"; empty for eager ops.
  std::string compile_state;
  double compile_seconds = 0;
  // Backends that run kernels on host CPUs: the host threads its launches
  // use (1, or every thread); 0 while that is not decided.
  int host_threads = 0;
};

class Executable {
 public:
  virtual ~Executable() = default;

  // The backend that prepared it: a device dispatches only its own kind.
  virtual BackendKind backend() const = 0;
  // Any thread.
  virtual ExecutableStatus status() const { return {}; }
};

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_EXECUTABLE_H_

// A bound on the host memory the CPU kernels of one launch may hold at once.
// The sim runs ATen's CPU kernels inside the daemon: without it, an operator
// asked for a huge temporary or result (a factory op, a cat) could exhaust
// the host and bring down every session with the daemon.
#ifndef NEURON_RTD_DAEMON_HAL_SIM_LAUNCH_HOST_BUDGET_H_
#define NEURON_RTD_DAEMON_HAL_SIM_LAUNCH_HOST_BUDGET_H_

#include <cstdint>
#include <memory>

namespace neuron::rtd::hal::sim {

namespace internal {
struct HostBudget;
}  // namespace internal

// While a scope lives, ATen CPU allocations made on its thread count against
// `limit_bytes` (live bytes, freed ones given back); one that would pass it
// throws c10::OutOfMemoryError naming the limit, which the launch reports as
// an operator error. Allocations of ATen's intra-op worker threads are not
// counted. Installs the counting allocator as ATen's CPU allocator the first
// time; outside a scope it only forwards.
// Thread-safety: a scope belongs to the thread that made it; scopes do not
// nest.
class LaunchHostBudget {
 public:
  explicit LaunchHostBudget(uint64_t limit_bytes);
  LaunchHostBudget(const LaunchHostBudget&) = delete;
  LaunchHostBudget& operator=(const LaunchHostBudget&) = delete;
  ~LaunchHostBudget();

  // The most the launch held at once so far.
  uint64_t peak_bytes() const;

 private:
  std::shared_ptr<internal::HostBudget> budget_;
};

}  // namespace neuron::rtd::hal::sim

#endif  // NEURON_RTD_DAEMON_HAL_SIM_LAUNCH_HOST_BUDGET_H_

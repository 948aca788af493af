// Tier 1 of graph executables: a graph that clients launch often is
// compiled into native code by the daemon's compiler worker (the simulated
// neuronx-cc), off the launch path, while it keeps running on tier 0. A
// backend that runs graphs on the host (the sim) says what it needs through
// this interface, which the HAL owns; daemon/compiler, a layer above,
// implements it with a supervised worker process and an on-disk cache of
// packages.
#ifndef NEURON_RTD_DAEMON_HAL_GRAPH_COMPILER_H_
#define NEURON_RTD_DAEMON_HAL_GRAPH_COMPILER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/hal/graph.h"

namespace neuron::rtd::hal {

// Thread-safety: every method may be called from any thread.
class GraphCompiler {
 public:
  virtual ~GraphCompiler() = default;

  // A compiled package: an AOTInductor .pt2 archive whose model takes the
  // graph's inputs then one buffer per output and returns nothing.
  struct Package {
    std::string path;
    // How long the worker took; 0 for a package found in the disk cache.
    double compile_seconds = 0;
  };

  // Called once per request, on the compiler's own thread, with the package
  // or why there is none. The path stays valid until the callback returns.
  using Ready = std::function<void(absl::StatusOr<Package> package)>;

  // How many tier-0 launches a graph has before it is compiled; 0: never.
  virtual uint64_t compile_after_launches() const = 0;

  // The package compiled earlier for a graph of the same content (by this
  // daemon or an earlier one, read from the disk cache and checked against
  // its recorded hash), if there is one. The path stays valid until the
  // next call that may evict.
  virtual std::optional<Package> Cached(const GraphPlan& graph) = 0;

  // Queues `graph` for compilation; `ready` runs once the worker is done.
  virtual void Request(const GraphPlan& graph, Ready ready) = 0;
};

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_GRAPH_COMPILER_H_

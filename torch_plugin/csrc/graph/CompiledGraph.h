// A graph torch.compile captured, loaded into neuron-rtd as one graph
// executable and run by one LAUNCH per call: the client allocates the
// outputs with the caching allocator and queues the launch on the current
// stream (asynchronous, as an eager operator); outputs that alias inputs or
// other outputs are made here as views, never sent to the daemon.
#ifndef TORCH_NEURONX_CSRC_GRAPH_COMPILED_GRAPH_H_
#define TORCH_NEURONX_CSRC_GRAPH_COMPILED_GRAPH_H_

#include <ATen/core/Tensor.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "neuron/rtd/abi/command_ring.h"
#include "neuron/rtd/graph_plan.h"

namespace torch_neuronx {

// A tensor's layout as the graph was traced with it.
struct TensorMeta {
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;
};

// How one of the graph's results reaches the caller.
struct GraphResult {
  enum class Kind {
    kComputed,   // graph value `value`, written by the launch into new memory
    kInput,      // input `input` itself
    kInputView,  // a view of input `input` (meta's sizes, strides, offset)
    // A view of result `output`, a kComputed one whose memory is its
    // storage's (meta's sizes, strides, offset): outputs that alias each
    // other stay aliased, as in eager.
    kOutputView,
    kNone,
  };
  Kind kind = Kind::kNone;
  uint32_t value = 0;
  uint32_t input = 0;
  uint32_t output = 0;
  TensorMeta meta;
};

// Thread-safety: Run may be called from any thread, concurrently.
// Lifetime: holds its executable in the daemon for the process's life.
class CompiledGraph {
 public:
  // Loads `plan` (its inputs' address indices 0..n-1, no outputs: they come
  // from `results`) for torch device `device`. `inputs` are the layouts the
  // graph was traced with.
  static std::shared_ptr<CompiledGraph> Load(neuron::rtd::GraphPlan plan,
                                             std::vector<TensorMeta> inputs,
                                             std::vector<GraphResult> results,
                                             c10::DeviceIndex device);

  // Runs the graph on `inputs` (neuron tensors of the traced sizes and
  // dtypes; other strides are copied to the traced ones) and returns its
  // results, undefined for None. The first launch is waited for, so that an
  // operator's error comes at the call; later ones are asynchronous.
  std::vector<at::Tensor> Run(const std::vector<at::Tensor>& inputs);

  uint64_t executable_id() const { return executable_id_; }
  const std::string& name() const { return name_; }
  uint64_t launches() const { return launches_.load(std::memory_order_relaxed); }

 private:
  CompiledGraph() = default;

  std::string name_;
  c10::DeviceIndex device_ = 0;
  uint64_t executable_id_ = 0;
  bool random_ = false;
  std::vector<TensorMeta> inputs_;
  std::vector<GraphResult> results_;
  // Launch addresses: the inputs, then one per computed result.
  size_t computed_count_ = 0;
  std::atomic<uint64_t> launches_{0};
};

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_GRAPH_COMPILED_GRAPH_H_

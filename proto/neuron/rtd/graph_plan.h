// A graph of ATen operators run by one LAUNCH (torch.compile), as plain
// data: what the client describes and the daemon runs for a graph
// executable. The wire form is neuron.rtd.v1.GraphExecutable
// (v1/executable.proto); libneuronrt encodes this struct into it,
// daemon/exec decodes and checks it back. No Protobuf, no PyTorch.
//
// Values: the graph's tensors are numbered in order, the inputs first
// (0 .. inputs-1), then each node's results (a Tensor[] return counts as its
// length), so that a node can only refer to values before it.
#ifndef NEURON_RTD_GRAPH_PLAN_H_
#define NEURON_RTD_GRAPH_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "neuron/rtd/eager_op.h"
#include "neuron/rtd/nki_kernel.h"

namespace neuron::rtd {

// A return of a node: a Tensor, or a Tensor[] of `length` tensors.
inline constexpr int32_t kTensorReturn = -1;

// The node that runs one of the graph's NKI kernels: arguments (the
// kernel's index in GraphPlan::nki_kernels, a GraphValues bound to its HBM
// address indices 0, 1, ...); one return, a Tensor[] of the HBM
// allocations the kernel writes, in address order (an argument it writes
// is copied first; its other allocations are new).
inline constexpr char kNkiCallNode[] = "nki::call";

struct GraphNode {
  std::string name;      // "aten::mm"
  std::string overload;  // "default"
  // In schema order; tensor arguments are GraphValue, GraphValues or
  // OptionalGraphValues. Trailing arguments may be left to their defaults.
  std::vector<OpValue> arguments;
  // Per return: kTensorReturn, or the length of a Tensor[] return.
  std::vector<int32_t> return_lengths;
};

// A value the launch writes into the client's memory at `destination`.
struct GraphOutput {
  GraphValue value;
  TensorLayout destination;
};

struct GraphPlan {
  // Shown in errors: "graph 'forward_3' node 12 (aten::mm): ...".
  std::string name;
  // LAUNCH addresses `address_index`, with these layouts.
  std::vector<TensorLayout> inputs;
  std::vector<GraphNode> nodes;
  std::vector<GraphOutput> outputs;
  // Random operators draw from one generator seeded for each launch from
  // here.
  std::optional<GeneratorSeed> generator;
  // The kernels of its kNkiCallNode nodes.
  std::vector<NkiKernelPlan> nki_kernels;
};

// How many values `node` adds to the graph. Its return lengths must have
// been checked (daemon/exec refuses any below kTensorReturn).
uint64_t NodeResultCount(const GraphNode& node);

}  // namespace neuron::rtd

#endif  // NEURON_RTD_GRAPH_PLAN_H_

#include "csrc/graph/CompiledGraph.h"

#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include "absl/strings/str_format.h"
#include "csrc/runtime/NeuronFunctions.h"
#include "csrc/runtime/NeuronGenerator.h"

namespace torch_neuronx {
namespace {

namespace rtd = neuron::rtd;

rtd::TensorLayout LayoutOf(const TensorMeta& meta, uint32_t address_index) {
  return rtd::TensorLayout{.dtype = static_cast<int32_t>(meta.dtype),
                           .sizes = meta.sizes,
                           .strides = meta.strides,
                           .address_index = address_index};
}

at::Tensor ViewOf(const at::Tensor& base, const TensorMeta& meta) {
  if (base.scalar_type() == meta.dtype) {
    return base.as_strided(meta.sizes, meta.strides, meta.storage_offset);
  }
  // A view that reads its base's bytes as another dtype (view(dtype)).
  at::Tensor view = at::detail::make_tensor<c10::TensorImpl>(
      c10::TensorImpl::VIEW, c10::Storage(base.storage()), base.key_set(),
      c10::scalarTypeToTypeMeta(meta.dtype));
  view.unsafeGetTensorImpl()->set_sizes_and_strides(meta.sizes, meta.strides,
                                                    meta.storage_offset);
  return view;
}

bool SameStrides(const at::Tensor& tensor, const TensorMeta& meta) {
  // A dimension of size 1 (or an empty tensor) has no stride that matters.
  if (tensor.numel() == 0) return true;
  for (size_t dim = 0; dim < meta.sizes.size(); ++dim) {
    if (meta.sizes[dim] != 1 && tensor.stride(static_cast<int64_t>(dim)) != meta.strides[dim]) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::shared_ptr<CompiledGraph> CompiledGraph::Load(rtd::GraphPlan plan,
                                                   std::vector<TensorMeta> inputs,
                                                   std::vector<GraphResult> results,
                                                   c10::DeviceIndex device) {
  CheckDevice(device);
  std::shared_ptr<CompiledGraph> graph(new CompiledGraph());
  graph->name_ = plan.name;
  graph->device_ = device;
  graph->random_ = plan.generator.has_value();
  plan.inputs.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    plan.inputs.push_back(LayoutOf(inputs[i], static_cast<uint32_t>(i)));
  }
  plan.outputs.clear();
  for (const GraphResult& result : results) {
    TORCH_CHECK(result.kind != GraphResult::Kind::kOutputView ||
                    (result.output < results.size() &&
                     results[result.output].kind == GraphResult::Kind::kComputed),
                "graph '", plan.name, "': result ", result.output,
                " is not a computed result another can view");
    if (result.kind != GraphResult::Kind::kComputed) continue;
    plan.outputs.push_back(rtd::GraphOutput{
        .value = rtd::GraphValue{result.value},
        .destination = LayoutOf(result.meta, static_cast<uint32_t>(inputs.size() +
                                                                   graph->computed_count_))});
    ++graph->computed_count_;
  }
  TORCH_CHECK(inputs.size() + graph->computed_count_ <= NEURON_RTD_MAX_LAUNCH_ARGS,
              "graph '", plan.name, "' has ", inputs.size(), " inputs and ",
              graph->computed_count_, " outputs; a neuron launch takes at most ",
              NEURON_RTD_MAX_LAUNCH_ARGS, " tensors");
  if (graph->random_) plan.generator = rtd::GeneratorSeed{.offset = 0};
  if (!plan.nodes.empty() || graph->computed_count_ > 0) {
    absl::StatusOr<uint64_t> id = GetRuntime().session().LoadGraph(plan, plan.name);
    ThrowIfError(id.status(), absl::StrFormat("loading graph '%s' into neuron-rtd", plan.name));
    graph->executable_id_ = *id;
  }
  graph->inputs_ = std::move(inputs);
  graph->results_ = std::move(results);
  return graph;
}

std::vector<at::Tensor> CompiledGraph::Run(const std::vector<at::Tensor>& inputs) {
  TORCH_CHECK(inputs.size() == inputs_.size(), "graph '", name_, "' takes ", inputs_.size(),
              " tensors; it was given ", inputs.size());
  c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, device_));
  const at::TensorOptions options =
      at::TensorOptions().device(c10::Device(c10::DeviceType::PrivateUse1, device_));
  std::vector<uint64_t> addresses;
  addresses.reserve(inputs.size() + computed_count_);
  // Inputs copied to the layout the graph was traced with; kept alive until
  // the launch is queued (the allocator orders their reuse after it).
  std::vector<at::Tensor> relaid;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& input = inputs[i];
    const TensorMeta& meta = inputs_[i];
    TORCH_CHECK(input.defined() && input.device() == options.device(), "graph '", name_,
                "' input ", i, " must be a tensor on ", options.device(), ", not ",
                input.defined() ? input.device().str() : std::string("None"));
    TORCH_CHECK(input.sizes().equals(meta.sizes) &&
                    input.scalar_type() == meta.dtype,
                "graph '", name_, "' input ", i, " is ", input.scalar_type(), input.sizes(),
                "; it was compiled for ", meta.dtype,
                c10::IntArrayRef(meta.sizes));
    if (SameStrides(input, meta)) {
      addresses.push_back(reinterpret_cast<uint64_t>(input.data_ptr()));
      continue;
    }
    relaid.push_back(at::empty_strided(meta.sizes, meta.strides, options.dtype(input.dtype())));
    relaid.back().copy_(input);
    addresses.push_back(reinterpret_cast<uint64_t>(relaid.back().data_ptr()));
  }
  std::vector<at::Tensor> results;
  results.reserve(results_.size());
  for (const GraphResult& result : results_) {
    switch (result.kind) {
      case GraphResult::Kind::kComputed:
        results.push_back(at::empty_strided(result.meta.sizes, result.meta.strides,
                                            options.dtype(result.meta.dtype)));
        addresses.push_back(reinterpret_cast<uint64_t>(results.back().data_ptr()));
        break;
      case GraphResult::Kind::kInput:
        results.push_back(inputs[result.input]);
        break;
      case GraphResult::Kind::kInputView:
        results.push_back(ViewOf(inputs[result.input], result.meta));
        break;
      case GraphResult::Kind::kOutputView:
      case GraphResult::Kind::kNone:
        results.emplace_back();
        break;
    }
  }
  for (size_t i = 0; i < results_.size(); ++i) {
    if (results_[i].kind == GraphResult::Kind::kOutputView) {
      results[i] = ViewOf(results[results_[i].output], results_[i].meta);
    }
  }
  if (executable_id_ == 0) return results;
  uint64_t seed = 0;
  if (random_) seed = DefaultGenerator(device_).get<NeuronGenerator>()->NextCallSeed();
  const std::span<const uint8_t> scalars(reinterpret_cast<const uint8_t*>(&seed),
                                         random_ ? sizeof(seed) : 0);
  neuronrt::Stream& stream = RuntimeStream(CurrentStream(device_));
  ThrowIfError(stream.Launch(executable_id_, addresses, scalars, name_).status(), name_);
  // The first launch is waited for, so that errors its kernels raise come at
  // the call with the CPU's exception type.
  if (launches_.fetch_add(1, std::memory_order_relaxed) == 0) {
    ThrowIfError(stream.Synchronize(), name_);
  }
  return results;
}

}  // namespace torch_neuronx

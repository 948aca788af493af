#include "csrc/distributed/NeuronBackend.h"

#include <ATen/ATen.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <memory>
#include <utility>

#include "absl/time/time.h"
#include "csrc/distributed/NeuronWork.h"
#include "csrc/distributed/Rendezvous.h"
#include "csrc/runtime/NeuronAllocator.h"
#include "csrc/runtime/NeuronFunctions.h"
#include "csrc/runtime/Runtime.h"

namespace torch_neuronx {
namespace {

uint32_t WireDtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return NEURON_RTD_DTYPE_FLOAT32;
    case at::kBFloat16:
      return NEURON_RTD_DTYPE_BFLOAT16;
    case at::kHalf:
      return NEURON_RTD_DTYPE_FLOAT16;
    case at::kChar:
      return NEURON_RTD_DTYPE_INT8;
    case at::kByte:
      return NEURON_RTD_DTYPE_UINT8;
    case at::kInt:
      return NEURON_RTD_DTYPE_INT32;
    case at::kLong:
      return NEURON_RTD_DTYPE_INT64;
    case at::kBool:
      return NEURON_RTD_DTYPE_BOOL;
    default:
      C10_THROW_ERROR(TypeError, c10::str("neuron collectives do not take ", type,
                                          " tensors (float32, bfloat16, float16, int8, uint8, "
                                          "int32, int64 and bool)"));
  }
}

// The wire reduce op, and the PREMUL_SUM factor in `scale`.
uint32_t WireReduceOp(const c10d::ReduceOp& op, double& scale) {
  scale = 0;
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return NEURON_RTD_REDUCE_SUM;
    case c10d::ReduceOp::AVG:
      return NEURON_RTD_REDUCE_AVG;
    case c10d::ReduceOp::PRODUCT:
      return NEURON_RTD_REDUCE_PRODUCT;
    case c10d::ReduceOp::MIN:
      return NEURON_RTD_REDUCE_MIN;
    case c10d::ReduceOp::MAX:
      return NEURON_RTD_REDUCE_MAX;
    case c10d::ReduceOp::PREMUL_SUM: {
      const auto* factor = dynamic_cast<const c10d::PreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(factor != nullptr, "PREMUL_SUM without its factor");
      scale = factor->tensor_factor.defined() ? factor->tensor_factor.item<double>()
                                              : factor->double_factor;
      return NEURON_RTD_REDUCE_PREMUL_SUM;
    }
    default:
      C10_THROW_ERROR(ValueError, c10::str("neuron collectives do not support ReduceOp ",
                                           static_cast<int>(op.op_),
                                           " (bitwise reductions); use SUM, AVG, PRODUCT, MIN, "
                                           "MAX or PREMUL_SUM"));
  }
}

uint64_t Address(const at::Tensor& tensor) {
  return reinterpret_cast<uint64_t>(tensor.data_ptr());
}

neuron_rtd_collective_op Operation(uint32_t kind, const at::Tensor& send, const at::Tensor& recv,
                                   uint64_t count, uint32_t peer = 0) {
  const at::Tensor& typed = send.defined() ? send : recv;
  return neuron_rtd_collective_op{.kind = kind,
                                  .reduce_op = NEURON_RTD_REDUCE_NONE,
                                  .dtype = WireDtype(typed.scalar_type()),
                                  .peer = peer,
                                  .send_address = send.defined() ? Address(send) : 0,
                                  .recv_address = recv.defined() ? Address(recv) : 0,
                                  .element_count = count,
                                  .scale = 0};
}

neuron_rtd_collective_op Reducing(uint32_t kind, const c10d::ReduceOp& reduce,
                                  const at::Tensor& send, const at::Tensor& recv, uint64_t count,
                                  uint32_t root = 0) {
  neuron_rtd_collective_op op = Operation(kind, send, recv, count, root);
  op.reduce_op = WireReduceOp(reduce, op.scale);
  return op;
}

void CheckSameSize(const at::Tensor& tensor, int64_t numel, const char* what) {
  if (tensor.numel() != numel) {
    C10_THROW_ERROR(ValueError, c10::str(what, " has ", tensor.numel(),
                                         " elements where the collective needs ", numel));
  }
}

void CheckRank(int64_t rank, int size, const char* what) {
  if (rank < 0 || rank >= size) {
    C10_THROW_ERROR(ValueError, c10::str(what, " ", rank, " is not a rank of this group of ",
                                         size));
  }
}

}  // namespace

NeuronBackend::NeuronBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                             std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size) {
  const neuronrt::Session::Communicator joined =
      JoinCommunicator(GetRuntime().session(), store, rank, size,
                       absl::Milliseconds(timeout.count()));
  handle_ = joined.handle;
  communicator_name_ = joined.name;
  next_send_.assign(size, 0);
  next_recv_.assign(size, 0);
}

NeuronBackend::~NeuronBackend() {
  // As ncclCommDestroy: what this rank enqueued finishes before it leaves
  // (leaving fails what the peers still wait on with it).
  if (device_) {
    try {
      c10::impl::VirtualGuardImpl(c10::DeviceType::PrivateUse1)
          .synchronizeDevice(*device_);
    } catch (const std::exception&) {
      // The device's error was the caller's to see; leaving goes on.
    }
  }
  if (Runtime* runtime = Runtime::GetIfOpen(); runtime != nullptr && !Runtime::InBadFork()) {
    (void)runtime->session().DestroyCommunicator(handle_);
  }
}

void NeuronBackend::EnsureOneDevice(const at::Tensor& tensor) {
  if (!tensor.defined()) return;
  if (tensor.device().type() != c10::DeviceType::PrivateUse1) {
    C10_THROW_ERROR(ValueError, c10::str("the neuron process group takes tensors on neuron "
                                         "devices; got one on ", tensor.device()));
  }
  if (!tensor.is_contiguous()) C10_THROW_ERROR(ValueError, "Tensors must be contiguous");
  if (!device_) device_ = tensor.device().index();
  if (tensor.device().index() != *device_) {
    C10_THROW_ERROR(ValueError,
                    c10::str("this rank's collectives run on neuron:", static_cast<int>(*device_),
                             "; got a tensor on ", tensor.device(),
                             " (one device per rank, as with NCCL)"));
  }
}

void NeuronBackend::Number(Call& call) {
  for (neuron_rtd_collective_op& op : call.ops) {
    if (op.kind == NEURON_RTD_COLLECTIVE_SEND) {
      op.sequence = next_send_[op.peer]++;
    } else if (op.kind == NEURON_RTD_COLLECTIVE_RECV) {
      op.sequence = next_recv_[op.peer]++;
    } else {
      op.sequence = next_collective_++;
    }
  }
  call.numbered = true;
}

c10::Stream NeuronBackend::CommunicationStream() {
  if (!communication_stream_) {
    communication_stream_ = c10::impl::VirtualGuardImpl(c10::DeviceType::PrivateUse1)
                                .getStreamFromGlobalPool(
                                    c10::Device(c10::DeviceType::PrivateUse1, *device_),
                                    /*isHighPriority=*/true);
  }
  return *communication_stream_;
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::Submit(Call call, c10d::OpType type,
                                                     bool blocking, bool async_op) {
  for (const at::Tensor& tensor : call.keep_alive) EnsureOneDevice(tensor);
  if (!call.numbered) Number(call);
  if (!device_) device_ = CurrentDevice();
  const c10::Device device(c10::DeviceType::PrivateUse1, *device_);
  auto work = c10::make_intrusive<NeuronWork>(rank_, type, call.outputs, device, blocking);
  if (coalescing_) {
    for (auto& op : call.ops) coalesced_.ops.push_back(op);
    for (auto& tensor : call.keep_alive) coalesced_.keep_alive.push_back(std::move(tensor));
    for (auto& tensor : call.outputs) coalesced_.outputs.push_back(std::move(tensor));
    for (auto& then : call.then) coalesced_.then.push_back(std::move(then));
    coalesced_works_.push_back(work);
    return work;
  }
  if (call.ops.size() > NEURON_RTD_MAX_COLLECTIVE_OPS) {
    C10_THROW_ERROR(ValueError, c10::str("one neuron collective call is at most ",
                                         NEURON_RTD_MAX_COLLECTIVE_OPS, " operations; this one is ",
                                         call.ops.size()));
  }
  const c10::Stream current = CurrentStream(*device_);
  const c10::Stream stream = async_op && !blocking ? CommunicationStream() : current;
  if (stream != current) {
    c10::Event ready(c10::DeviceType::PrivateUse1);
    ready.record(current);
    ready.block(stream);
    // The caching allocator must not hand these blocks to the current
    // stream again until the communication stream is done with them.
    for (const at::Tensor& tensor : call.keep_alive) {
      NeuronAllocator().recordStream(tensor.storage().data_ptr(), stream);
    }
  }
  // The copies after the record, and the future's events, go to `stream`.
  c10::StreamGuard on_stream(stream);
  absl::StatusOr<neuronrt::Event> enqueued =
      RuntimeStream(stream).Collective(handle_, call.ops, c10d::opTypeToString(type));
  if (!enqueued.ok()) {
    C10_THROW_ERROR(DistBackendError, c10::str("enqueueing ", c10d::opTypeToString(type),
                                               " on neuron: ", enqueued.status().message()));
  }
  for (const auto& then : call.then) then();
  work->Complete(stream);
  return work;
}

void NeuronBackend::startCoalescing() {
  TORCH_CHECK(!coalescing_, "the neuron process group is already coalescing");
  coalescing_ = true;
  coalesced_ = Call{.numbered = true};
  coalesced_works_.clear();
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::endCoalescing() {
  TORCH_CHECK(coalescing_, "endCoalescing without startCoalescing");
  coalescing_ = false;
  Call call = std::move(coalesced_);
  std::vector<c10::intrusive_ptr<c10d::Work>> works = std::move(coalesced_works_);
  if (call.ops.empty()) return c10::make_intrusive<NeuronWork>(
      rank_, c10d::OpType::COALESCED, std::vector<at::Tensor>{},
      c10::Device(c10::DeviceType::PrivateUse1, device_.value_or(CurrentDevice())), false,
      /*completed=*/true);
  c10::intrusive_ptr<c10d::Work> group = Submit(std::move(call), c10d::OpType::COALESCED);
  for (auto& work : works) {
    static_cast<NeuronWork*>(work.get())->Complete(CurrentStream(*device_));
  }
  return group;
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                        const c10d::BroadcastOptions& opts) {
  TORCH_CHECK(tensors.size() == 1, "neuron collectives take one tensor per rank");
  CheckRank(opts.rootRank, size_, "root");
  const at::Tensor& tensor = tensors[0];
  Call call{.keep_alive = {tensor}, .outputs = {tensor}};
  call.ops.push_back(Operation(NEURON_RTD_COLLECTIVE_BROADCAST, tensor, tensor, tensor.numel(),
                               static_cast<uint32_t>(opts.rootRank)));
  return Submit(std::move(call), c10d::OpType::BROADCAST, false, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::AllreduceOptions& opts) {
  TORCH_CHECK(tensors.size() == 1, "neuron collectives take one tensor per rank");
  const at::Tensor& tensor = tensors[0];
  Call call{.keep_alive = {tensor}, .outputs = {tensor}};
  call.ops.push_back(
      Reducing(NEURON_RTD_COLLECTIVE_ALL_REDUCE, opts.reduceOp, tensor, tensor, tensor.numel()));
  return Submit(std::move(call), c10d::OpType::ALLREDUCE, false, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  Call call{.keep_alive = tensors, .outputs = tensors};
  for (const at::Tensor& tensor : tensors) {
    call.ops.push_back(
        Reducing(NEURON_RTD_COLLECTIVE_ALL_REDUCE, opts.reduceOp, tensor, tensor, tensor.numel()));
  }
  return Submit(std::move(call), c10d::OpType::ALLREDUCE_COALESCED, false, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::reduce(std::vector<at::Tensor>& tensors,
                                                     const c10d::ReduceOptions& opts) {
  TORCH_CHECK(tensors.size() == 1, "neuron collectives take one tensor per rank");
  CheckRank(opts.rootRank, size_, "root");
  const at::Tensor& tensor = tensors[0];
  Call call{.keep_alive = {tensor}, .outputs = {tensor}};
  call.ops.push_back(Reducing(NEURON_RTD_COLLECTIVE_REDUCE, opts.reduceOp, tensor, tensor,
                              tensor.numel(), static_cast<uint32_t>(opts.rootRank)));
  return Submit(std::move(call), c10d::OpType::REDUCE, false, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::_allgather_base(at::Tensor& output,
                                                              at::Tensor& input,
                                                              const c10d::AllgatherOptions& opts) {
  CheckSameSize(output, input.numel() * size_, "the output tensor");
  Call call{.keep_alive = {output, input}, .outputs = {output}};
  call.ops.push_back(Operation(NEURON_RTD_COLLECTIVE_ALL_GATHER, input, output, input.numel()));
  return Submit(std::move(call), c10d::OpType::_ALLGATHER_BASE, false, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "as many outputs as inputs");
  Call call{.outputs = outputs};
  for (size_t i = 0; i < inputs.size(); ++i) {
    CheckSameSize(outputs[i], inputs[i].numel() * size_, "an output tensor");
    call.keep_alive.push_back(outputs[i]);
    call.keep_alive.push_back(inputs[i]);
    call.ops.push_back(
        Operation(NEURON_RTD_COLLECTIVE_ALL_GATHER, inputs[i], outputs[i], inputs[i].numel()));
  }
  return Submit(std::move(call), c10d::OpType::COALESCED, false, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(inputs.size() == 1 && outputs.size() == 1,
              "neuron collectives take one tensor per rank");
  const at::Tensor& input = inputs[0];
  std::vector<at::Tensor>& targets = outputs[0];
  if (static_cast<int>(targets.size()) != size_) {
    C10_THROW_ERROR(ValueError, c10::str("all_gather needs ", size_, " output tensors; got ",
                                         targets.size()));
  }
  const int64_t numel = input.numel();
  for (const at::Tensor& target : targets) CheckSameSize(target, numel, "an output tensor");
  at::Tensor staging = at::empty({numel * size_}, input.options());
  Call call{.keep_alive = {input, staging}, .outputs = targets};
  call.ops.push_back(Operation(NEURON_RTD_COLLECTIVE_ALL_GATHER, input, staging, numel));
  call.then.push_back([staging, targets, numel]() mutable {
    for (size_t i = 0; i < targets.size(); ++i) {
      targets[i].copy_(staging.narrow(0, static_cast<int64_t>(i) * numel, numel)
                           .view(targets[i].sizes()));
    }
  });
  return Submit(std::move(call), c10d::OpType::ALLGATHER, false, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  CheckSameSize(input, output.numel() * size_, "the input tensor");
  Call call{.keep_alive = {output, input}, .outputs = {output}};
  call.ops.push_back(Reducing(NEURON_RTD_COLLECTIVE_REDUCE_SCATTER, opts.reduceOp, input, output,
                              output.numel()));
  return Submit(std::move(call), c10d::OpType::_REDUCE_SCATTER_BASE, false, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "as many outputs as inputs");
  Call call{.outputs = outputs};
  for (size_t i = 0; i < inputs.size(); ++i) {
    CheckSameSize(inputs[i], outputs[i].numel() * size_, "an input tensor");
    call.keep_alive.push_back(outputs[i]);
    call.keep_alive.push_back(inputs[i]);
    call.ops.push_back(Reducing(NEURON_RTD_COLLECTIVE_REDUCE_SCATTER, opts.reduceOp, inputs[i],
                                outputs[i], outputs[i].numel()));
  }
  return Submit(std::move(call), c10d::OpType::COALESCED, false, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(inputs.size() == 1 && outputs.size() == 1,
              "neuron collectives take one tensor per rank");
  const at::Tensor& output = outputs[0];
  if (static_cast<int>(inputs[0].size()) != size_) {
    C10_THROW_ERROR(ValueError, c10::str("reduce_scatter needs ", size_, " input tensors; got ",
                                         inputs[0].size()));
  }
  std::vector<at::Tensor> flat;
  for (const at::Tensor& input : inputs[0]) {
    CheckSameSize(input, output.numel(), "an input tensor");
    flat.push_back(input.reshape({-1}));
  }
  at::Tensor staging = at::cat(flat);
  Call call{.keep_alive = {output, staging}, .outputs = {output}};
  call.ops.push_back(Reducing(NEURON_RTD_COLLECTIVE_REDUCE_SCATTER, opts.reduceOp, staging, output,
                              output.numel()));
  return Submit(std::move(call), c10d::OpType::REDUCE_SCATTER, false, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_split_sizes,
    std::vector<int64_t>& input_split_sizes, const c10d::AllToAllOptions& opts) {
  // Rows along dim 0, as c10d's all_to_all_single; each peer's share is a
  // SEND and a RECV of one group.
  auto splits = [&](const at::Tensor& tensor, const std::vector<int64_t>& sizes,
                    const char* what) {
    std::vector<int64_t> rows = sizes;
    const int64_t total = tensor.dim() == 0 ? 1 : tensor.size(0);
    if (rows.empty()) {
      if (total % size_ != 0) {
        C10_THROW_ERROR(ValueError, c10::str(what, "'s first dimension, ", total,
                                             ", does not split evenly into ", size_, " ranks"));
      }
      rows.assign(size_, total / size_);
    }
    int64_t sum = 0;
    for (int64_t row : rows) sum += row;
    if (static_cast<int>(rows.size()) != size_ || sum != total) {
      C10_THROW_ERROR(ValueError, c10::str(what, " split sizes ", c10::IntArrayRef(rows),
                                           " do not cover its ", total, " rows in ", size_,
                                           " parts"));
    }
    return rows;
  };
  const std::vector<int64_t> out_rows = splits(output, output_split_sizes, "the output");
  const std::vector<int64_t> in_rows = splits(input, input_split_sizes, "the input");
  const int64_t row_elements =
      input.dim() == 0 || input.size(0) == 0 ? 0 : input.numel() / input.size(0);
  const at::Tensor flat_in = input.reshape({-1});
  const at::Tensor flat_out = output.reshape({-1});
  Call call{.keep_alive = {output, input}, .outputs = {output}};
  int64_t in_offset = 0;
  int64_t out_offset = 0;
  for (int peer = 0; peer < size_; ++peer) {
    const int64_t sent = in_rows[peer] * row_elements;
    const int64_t received = out_rows[peer] * row_elements;
    call.ops.push_back(Operation(NEURON_RTD_COLLECTIVE_SEND, flat_in.narrow(0, in_offset, sent),
                                 at::Tensor(), sent, peer));
    call.ops.push_back(Operation(NEURON_RTD_COLLECTIVE_RECV, at::Tensor(),
                                 flat_out.narrow(0, out_offset, received), received, peer));
    in_offset += sent;
    out_offset += received;
  }
  return Submit(std::move(call), c10d::OpType::ALLTOALL_BASE, false, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                       std::vector<at::Tensor>& inputs,
                                                       const c10d::AllToAllOptions& opts) {
  if (static_cast<int>(outputs.size()) != size_ || static_cast<int>(inputs.size()) != size_) {
    C10_THROW_ERROR(ValueError, c10::str("all_to_all needs ", size_,
                                         " input and output tensors"));
  }
  Call call{.outputs = outputs};
  for (int peer = 0; peer < size_; ++peer) {
    call.keep_alive.push_back(inputs[peer]);
    call.keep_alive.push_back(outputs[peer]);
    call.ops.push_back(Operation(NEURON_RTD_COLLECTIVE_SEND, inputs[peer], at::Tensor(),
                                 inputs[peer].numel(), peer));
    call.ops.push_back(Operation(NEURON_RTD_COLLECTIVE_RECV, at::Tensor(), outputs[peer],
                                 outputs[peer].numel(), peer));
  }
  return Submit(std::move(call), c10d::OpType::ALLTOALL, false, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  TORCH_CHECK(inputs.size() == 1, "neuron collectives take one tensor per rank");
  CheckRank(opts.rootRank, size_, "root");
  const auto root = static_cast<uint32_t>(opts.rootRank);
  const at::Tensor& input = inputs[0];
  Call call{.keep_alive = {input}};
  call.ops.push_back(
      Operation(NEURON_RTD_COLLECTIVE_SEND, input, at::Tensor(), input.numel(), root));
  if (rank_ == opts.rootRank) {
    if (outputs.size() != 1 || static_cast<int>(outputs[0].size()) != size_) {
      C10_THROW_ERROR(ValueError, c10::str("gather's root needs ", size_, " output tensors"));
    }
    for (int peer = 0; peer < size_; ++peer) {
      const at::Tensor& target = outputs[0][peer];
      CheckSameSize(target, input.numel(), "an output tensor");
      call.keep_alive.push_back(target);
      call.outputs.push_back(target);
      call.ops.push_back(
          Operation(NEURON_RTD_COLLECTIVE_RECV, at::Tensor(), target, target.numel(), peer));
    }
  }
  return Submit(std::move(call), c10d::OpType::GATHER, false, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == 1, "neuron collectives take one tensor per rank");
  CheckRank(opts.rootRank, size_, "root");
  const auto root = static_cast<uint32_t>(opts.rootRank);
  const at::Tensor& output = outputs[0];
  Call call{.keep_alive = {output}, .outputs = {output}};
  if (rank_ == opts.rootRank) {
    if (inputs.size() != 1 || static_cast<int>(inputs[0].size()) != size_) {
      C10_THROW_ERROR(ValueError, c10::str("scatter's root needs ", size_, " input tensors"));
    }
    for (int peer = 0; peer < size_; ++peer) {
      const at::Tensor& source = inputs[0][peer];
      CheckSameSize(source, output.numel(), "an input tensor");
      call.keep_alive.push_back(source);
      call.ops.push_back(
          Operation(NEURON_RTD_COLLECTIVE_SEND, source, at::Tensor(), source.numel(), peer));
    }
  }
  call.ops.push_back(
      Operation(NEURON_RTD_COLLECTIVE_RECV, at::Tensor(), output, output.numel(), root));
  return Submit(std::move(call), c10d::OpType::SCATTER, false, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::send(std::vector<at::Tensor>& tensors, int dst_rank,
                                                   int /*tag*/) {
  TORCH_CHECK(tensors.size() == 1, "neuron collectives take one tensor per rank");
  CheckRank(dst_rank, size_, "destination");
  const at::Tensor& tensor = tensors[0];
  Call call{.keep_alive = {tensor}};
  call.ops.push_back(Operation(NEURON_RTD_COLLECTIVE_SEND, tensor, at::Tensor(), tensor.numel(),
                               static_cast<uint32_t>(dst_rank)));
  return Submit(std::move(call), c10d::OpType::SEND);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::recv(std::vector<at::Tensor>& tensors, int src_rank,
                                                   int /*tag*/) {
  TORCH_CHECK(tensors.size() == 1, "neuron collectives take one tensor per rank");
  CheckRank(src_rank, size_, "source");
  const at::Tensor& tensor = tensors[0];
  Call call{.keep_alive = {tensor}, .outputs = {tensor}};
  call.ops.push_back(Operation(NEURON_RTD_COLLECTIVE_RECV, at::Tensor(), tensor, tensor.numel(),
                               static_cast<uint32_t>(src_rank)));
  return Submit(std::move(call), c10d::OpType::RECV);
}

c10::intrusive_ptr<c10d::Work> NeuronBackend::barrier(const c10d::BarrierOptions&) {
  Call call;
  call.ops.push_back(neuron_rtd_collective_op{.kind = NEURON_RTD_COLLECTIVE_BARRIER});
  return Submit(std::move(call), c10d::OpType::BARRIER, /*blocking=*/true);
}

}  // namespace torch_neuronx

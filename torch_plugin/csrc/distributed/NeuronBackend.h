// The c10d backend "neuron": each rank is a session of neuron-rtd, and a
// process group is a daemon communicator. A collective is a COLLECTIVE
// record on the caller's current stream, so it is ordered with the
// operators around it exactly as on CUDA with NCCL (no CPU wait); the daemon
// matches the ranks' records and moves the data in HBM.
//
// Thread-safety: as c10d's backends: calls of one process group come from one
// thread at a time (coalescing state is per backend).
#ifndef TORCH_NEURONX_CSRC_DISTRIBUTED_NEURONBACKEND_H_
#define TORCH_NEURONX_CSRC_DISTRIBUTED_NEURONBACKEND_H_

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "neuron/rtd/abi/command_ring.h"

namespace torch_neuronx {

class NeuronBackend final : public c10d::Backend {
 public:
  // Joins the group's daemon communicator: rank 0 creates its id and
  // publishes it in `store`, every rank joins with it (waiting up to
  // `timeout` for the others). `timeout` also bounds how long a collective
  // waits for its peers.
  NeuronBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                std::chrono::milliseconds timeout);
  ~NeuronBackend() override;

  const std::string getBackendName() const override { return "neuron"; }
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;
  // Blocks the CPU until every rank has reached it (as NCCL's).
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // The daemon communicator's name (`neuronctl groups`).
  const std::string& communicator_name() const { return communicator_name_; }

 private:
  // What one c10d call becomes: operations of one COLLECTIVE record, the
  // tensors they use (kept alive by the Work), and what runs after the
  // record on the same stream (copies out of a staging buffer).
  struct Call {
    std::vector<neuron_rtd_collective_op> ops;
    std::vector<at::Tensor> keep_alive;
    std::vector<at::Tensor> outputs;
    std::vector<std::function<void()>> then;
    // The operations carry their sequence numbers (a coalesced group's
    // were given as each call joined it).
    bool numbered = false;
  };

  // Enqueues the call on the current stream or, for an asynchronous call
  // (async_op=True), on the rank's communication stream after what the
  // current stream holds, as NCCL does: compute issued next on the current
  // stream overlaps it until Work.wait() orders the stream after it.
  c10::intrusive_ptr<c10d::Work> Submit(Call call, c10d::OpType type, bool blocking = false,
                                        bool async_op = false);
  // The communication stream of device_ (created on first use, high priority).
  c10::Stream CommunicationStream();
  // Numbers the call's operations in issue order (the daemon matches the
  // ranks' k-th collectives, and the k-th send of a pair with its k-th
  // receive, whatever stream each was issued on).
  void Number(Call& call);
  void EnsureOneDevice(const at::Tensor& tensor);

  uint64_t handle_ = 0;
  std::string communicator_name_;
  // The device of this rank's tensors, fixed by the first collective.
  std::optional<c10::DeviceIndex> device_;
  uint64_t next_collective_ = 0;
  std::vector<uint64_t> next_send_;
  std::vector<uint64_t> next_recv_;
  std::optional<c10::Stream> communication_stream_;
  bool coalescing_ = false;
  Call coalesced_;
  std::vector<c10::intrusive_ptr<c10d::Work>> coalesced_works_;
};

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_DISTRIBUTED_NEURONBACKEND_H_

// The Work of a neuron collective: the point on the stream where its
// COLLECTIVE record (and the copies after it) end.
#ifndef TORCH_NEURONX_CSRC_DISTRIBUTED_NEURONWORK_H_
#define TORCH_NEURONX_CSRC_DISTRIBUTED_NEURONWORK_H_

#include <ATen/core/ivalue.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <memory>
#include <optional>
#include <vector>

namespace torch_neuronx {

// Thread-safety: as c10d's Work: Complete comes before any other thread
// sees the Work; query methods may then be called from any thread.
class NeuronWork final : public c10d::Work {
 public:
  // `blocking`: wait() blocks the CPU until the operation has run (a
  // barrier); otherwise wait() only orders the current stream after it.
  NeuronWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, c10::Device device,
             bool blocking, bool completed = false);

  // The operation's last command is on `stream`: records its end there and
  // completes the future (whose waiters then order their streams after it).
  void Complete(const c10::Stream& stream);

  bool isCompleted() override;
  bool isSuccess() const override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  void synchronize() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  const std::vector<at::Tensor> outputs_;
  const c10::Device device_;
  const bool blocking_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::optional<c10::Stream> stream_;
  std::shared_ptr<c10::Event> end_;
};

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_DISTRIBUTED_NEURONWORK_H_

#include "csrc/distributed/NeuronWork.h"

#include <c10/util/Exception.h>

#include <utility>

#include "csrc/runtime/NeuronFunctions.h"

namespace torch_neuronx {

NeuronWork::NeuronWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
                       c10::Device device, bool blocking, bool completed)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      device_(device),
      blocking_(blocking),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()), std::vector<c10::Device>{device})) {
  if (completed) future_->markCompleted(c10::IValue(outputs_));
}

void NeuronWork::Complete(const c10::Stream& stream) {
  auto end = std::make_shared<c10::Event>(c10::DeviceType::PrivateUse1);
  end->record(stream);
  end_ = std::move(end);
  stream_ = stream;
  // Records the future's own events on the current stream, which is
  // `stream`: a waiter's stream then waits for the same point.
  future_->markCompleted(c10::IValue(outputs_));
}

bool NeuronWork::isCompleted() { return end_ == nullptr ? future_->completed() : end_->query(); }

bool NeuronWork::isSuccess() const { return true; }

bool NeuronWork::wait(std::chrono::milliseconds /*timeout*/) {
  if (end_ == nullptr) {
    TORCH_CHECK(future_->completed(),
                "wait() on a neuron collective of a coalescing block that has not ended");
    return true;
  }
  if (blocking_) {
    end_->synchronize();
    return true;
  }
  const c10::Stream current = CurrentStream(device_.index());
  if (current != *stream_) end_->block(current);
  return true;
}

void NeuronWork::synchronize() { wait(); }

}  // namespace torch_neuronx

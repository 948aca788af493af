#include "daemon/collectives/group_completion.h"

#include <utility>

namespace neuron::rtd::collectives {

GroupCompletion::GroupCompletion(uint32_t operations, std::function<void()> on_done)
    : pending_(operations), on_done_(std::move(on_done)) {}

absl::Status GroupCompletion::status() const {
  absl::MutexLock lock(&mutex_);
  return status_;
}

void GroupCompletion::Settle(const absl::Status& status) {
  if (!status.ok()) {
    absl::MutexLock lock(&mutex_);
    if (status_.ok()) status_ = status;
  }
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  done_.store(true, std::memory_order_seq_cst);
  if (on_done_) on_done_();
}

}  // namespace neuron::rtd::collectives

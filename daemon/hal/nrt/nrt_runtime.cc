#include "daemon/hal/nrt/nrt_runtime.h"

#include "absl/strings/str_format.h"

namespace neuron::rtd::hal::nrt {

void NrtRuntime::AddSegmentTensor() {
  absl::MutexLock lock(&mutex_);
  ++segment_tensors_;
}

void NrtRuntime::RemoveSegmentTensor() {
  absl::MutexLock lock(&mutex_);
  --segment_tensors_;
}

void NrtRuntime::SetFault(int32_t vnc, std::string reason) {
  absl::MutexLock lock(&mutex_);
  faults_[vnc] = std::move(reason);
}

std::string NrtRuntime::Fault(int32_t vnc) const {
  absl::MutexLock lock(&mutex_);
  auto it = faults_.find(vnc);
  return it == faults_.end() ? std::string() : it->second;
}

bool NrtRuntime::CallUnlessRestarting(absl::FunctionRef<void()> call) const {
  if (!mutex_.ReaderTryLock()) return false;
  call();
  mutex_.ReaderUnlock();
  return true;
}

absl::Status NrtRuntime::Restart(absl::Duration timeout,
                                 absl::FunctionRef<void()> unload_models) {
  absl::MutexLock lock(&mutex_);
  auto released = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return segment_tensors_ == 0;
  };
  if (!mutex_.AwaitWithTimeout(absl::Condition(&released), timeout)) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "%d segments of device memory were still in use after %s; the runtime was not "
        "restarted",
        segment_tensors_, absl::FormatDuration(timeout)));
  }
  unload_models();
  library_->api().close();
  if (absl::Status started = library_->ToStatus(
          library_->api().init(NRT_FRAMEWORK_TYPE_NO_FW, framework_version_.c_str(), ""),
          "nrt_init (restarting the runtime)");
      !started.ok()) {
    return started;
  }
  faults_.clear();
  return absl::OkStatus();
}

}  // namespace neuron::rtd::hal::nrt

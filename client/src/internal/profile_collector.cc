#include "src/internal/profile_collector.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace neuronrt {
namespace {

thread_local uint64_t thread_correlation_id = 0;

}  // namespace

void SetThreadCorrelationId(uint64_t id) { thread_correlation_id = id; }
uint64_t ThreadCorrelationId() { return thread_correlation_id; }

int64_t MonotonicNowNs() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

const char* EngineName(Engine engine) {
  switch (engine) {
    case Engine::kTensor: return "Tensor";
    case Engine::kVector: return "Vector";
    case Engine::kScalar: return "Scalar";
    case Engine::kGpSimd: return "GpSimd";
    case Engine::kDma: return "DMA";
    case Engine::kCollective: return "Collective";
    case Engine::kSync: return "Sync";
    case Engine::kHost: return "Host";
    default: return "Mixed";
  }
}

}  // namespace neuronrt

namespace neuronrt::internal {
namespace {

int32_t CurrentThreadId() {
  thread_local const auto tid = static_cast<int32_t>(::syscall(SYS_gettid));
  return tid;
}

}  // namespace

void ProfileCollector::Start(const ProfilingOptions& options) {
  for (auto& word : core_mask_) word.store(0, std::memory_order_relaxed);
  for (uint32_t core : options.cores) {
    if (core < kMaxCores) core_mask_[core / 64].fetch_or(uint64_t{1} << (core % 64));
  }
  all_cores_.store(options.cores.empty(), std::memory_order_relaxed);
  runtime_spans_.store(options.runtime_spans, std::memory_order_relaxed);
  active_.store(true, std::memory_order_release);
}

void ProfileCollector::Stop() { active_.store(false, std::memory_order_release); }

void ProfileCollector::AddSpan(std::string name, std::string detail, int64_t start_ns) {
  RuntimeSpan span{.name = std::move(name),
                   .detail = std::move(detail),
                   .start_ns = start_ns,
                   .end_ns = MonotonicNowNs(),
                   .thread = CurrentThreadId()};
  absl::MutexLock lock(&mutex_);
  records_.spans.push_back(std::move(span));
}

void ProfileCollector::NoteSubmit(uint64_t stream_id, uint64_t sequence) {
  const Submit submit{.ns = MonotonicNowNs(), .thread = CurrentThreadId()};
  absl::MutexLock lock(&mutex_);
  if (submit_order_.size() >= kMaxPendingSubmits) {
    submits_.erase(submit_order_.front());
    submit_order_.pop_front();
  }
  const Key key{stream_id, sequence};
  submits_[key] = submit;
  submit_order_.push_back(key);
}

void ProfileCollector::Absorb(std::vector<ProfiledCommand> commands,
                              std::vector<RuntimeSpan> spans, uint64_t dropped) {
  absl::MutexLock lock(&mutex_);
  records_.dropped += dropped;
  for (ProfiledCommand& command : commands) {
    const Key key{command.stream_id, command.sequence};
    if (auto submit = submits_.find(key); submit != submits_.end()) {
      command.submit_ns = submit->second.ns;
      command.submit_thread = submit->second.thread;
      submits_.erase(submit);
    }
    if ((command.correlation_id & kTimingCorrelation) != 0) {
      if (timing_order_.size() >= kMaxTimings) {
        timings_.erase(timing_order_.front());
        timing_order_.pop_front();
      }
      timings_[key] = command.end_ns;
      timing_order_.push_back(key);
      continue;
    }
    records_.commands.push_back(std::move(command));
  }
  for (RuntimeSpan& span : spans) records_.spans.push_back(std::move(span));
  // Matched submits leave the order lazily: drop the front ones already gone.
  while (!submit_order_.empty() && !submits_.contains(submit_order_.front())) {
    submit_order_.pop_front();
  }
}

ProfileRecords ProfileCollector::Take() {
  absl::MutexLock lock(&mutex_);
  return std::exchange(records_, ProfileRecords{});
}

std::optional<int64_t> ProfileCollector::TimingEnd(uint64_t stream_id, uint64_t sequence) {
  absl::MutexLock lock(&mutex_);
  auto found = timings_.find(Key{stream_id, sequence});
  if (found == timings_.end()) return std::nullopt;
  return found->second;
}

}  // namespace neuronrt::internal

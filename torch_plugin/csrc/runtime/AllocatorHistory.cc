#include "csrc/runtime/AllocatorHistory.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"

namespace torch_neuronx {

std::string_view TraceActionName(TraceAction action) {
  switch (action) {
    case TraceAction::kAlloc:
      return "alloc";
    case TraceAction::kFreeRequested:
      return "free_requested";
    case TraceAction::kFreeCompleted:
      return "free_completed";
    case TraceAction::kSegmentAlloc:
      return "segment_alloc";
    case TraceAction::kSegmentFree:
      return "segment_free";
    case TraceAction::kSnapshot:
      return "snapshot";
    case TraceAction::kOom:
      return "oom";
  }
  return "unknown";
}

void AllocatorHistory::Configure(const HistoryOptions& options, StackGatherer gatherer) {
  absl::MutexLock lock(&mutex_);
  if (options.clear_history) rings_.clear();
  if (options.max_entries != options_.max_entries) {
    // Entries past the new bound go, oldest first; the ring restarts in
    // order.
    for (Ring& ring : rings_) {
      std::vector<TraceEntry> ordered;
      ordered.reserve(ring.entries.size());
      for (size_t i = 0; i < ring.entries.size(); ++i) {
        ordered.push_back(std::move(ring.entries[(ring.next + i) % ring.entries.size()]));
      }
      if (ordered.size() > options.max_entries) {
        ordered.erase(ordered.begin(),
                      ordered.begin() + static_cast<ptrdiff_t>(ordered.size() - options.max_entries));
      }
      ring.entries = std::move(ordered);
      ring.next = 0;
    }
  }
  options_ = options;
  gatherer_ = std::move(gatherer);
  const bool all = options.record == HistoryOptions::Record::kAll;
  stacks_for_alloc_ = options.context != HistoryOptions::Context::kNone && gatherer_;
  stacks_for_free_ = options.context == HistoryOptions::Context::kAll && all && gatherer_;
  recording_ = all && options.max_entries > 0;
}

std::shared_ptr<c10::GatheredContext> AllocatorHistory::Gather(bool wanted) {
  if (!wanted) return nullptr;
  StackGatherer gatherer;
  bool cpp_frames = false;
  {
    absl::MutexLock lock(&mutex_);
    if (!gatherer_) return nullptr;
    gatherer = gatherer_;
    cpp_frames = options_.cpp_frames;
  }
  return gatherer(cpp_frames);
}

std::shared_ptr<c10::GatheredContext> AllocatorHistory::GatherForAlloc() {
  return Gather(stacks_for_alloc_);
}

std::shared_ptr<c10::GatheredContext> AllocatorHistory::GatherForFree() {
  return Gather(stacks_for_free_);
}

void AllocatorHistory::Record(TraceEntry entry) {
  if (!recording_) return;
  absl::MutexLock lock(&mutex_);
  if (options_.record != HistoryOptions::Record::kAll || options_.max_entries == 0 ||
      options_.skip[static_cast<int>(entry.action)]) {
    return;
  }
  const bool alloc_like =
      entry.action == TraceAction::kAlloc || entry.action == TraceAction::kSegmentAlloc;
  if (alloc_like && options_.context == HistoryOptions::Context::kState) entry.context = nullptr;
  entry.time_us = absl::ToUnixMicros(absl::Now());
  const auto device = static_cast<size_t>(entry.device);
  if (rings_.size() <= device) rings_.resize(device + 1);
  Ring& ring = rings_[device];
  if (ring.entries.size() < options_.max_entries) {
    ring.entries.push_back(std::move(entry));
  } else {
    ring.entries[ring.next] = std::move(entry);
    ring.next = (ring.next + 1) % ring.entries.size();
  }
}

std::vector<std::vector<TraceEntry>> AllocatorHistory::Traces(size_t devices) {
  absl::MutexLock lock(&mutex_);
  std::vector<std::vector<TraceEntry>> traces(std::max(devices, rings_.size()));
  for (size_t device = 0; device < rings_.size(); ++device) {
    const Ring& ring = rings_[device];
    for (size_t i = 0; i < ring.entries.size(); ++i) {
      traces[device].push_back(ring.entries[(ring.next + i) % ring.entries.size()]);
    }
  }
  return traces;
}

}  // namespace torch_neuronx

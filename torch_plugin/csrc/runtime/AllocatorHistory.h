// What torch.neuron.memory._record_memory_history asks the caching allocator
// to keep (a history stays readable after recording stops, until cleared): the stack of each live allocation and a bounded history of its
// actions (alloc, free, segment alloc/free, out of memory), in the terms of
// PyTorch's memory snapshot (torch.cuda.memory._snapshot), so PyTorch's
// memory visualiser reads a neuron snapshot as it reads a CUDA one.
#ifndef TORCH_NEURONX_CSRC_RUNTIME_ALLOCATOR_HISTORY_H_
#define TORCH_NEURONX_CSRC_RUNTIME_ALLOCATOR_HISTORY_H_

#include <c10/core/Allocator.h>
#include <c10/core/Stream.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace torch_neuronx {

enum class TraceAction {
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kSnapshot,
  kOom,
};
inline constexpr int kTraceActionCount = 7;

// The snapshot's name of `action` ("alloc", "free_requested", ...).
std::string_view TraceActionName(TraceAction action);

struct TraceEntry {
  TraceAction action = TraceAction::kAlloc;
  c10::DeviceIndex device = 0;
  uint64_t address = 0;
  size_t size = 0;
  c10::StreamId stream = 0;
  int64_t time_us = 0;
  // For kOom: the device's free bytes.
  size_t device_free = 0;
  // The stack of the call, when the options keep one for this action.
  std::shared_ptr<c10::GatheredContext> context;
};

struct HistoryOptions {
  // enabled=None / "state" / "all": nothing, stacks of live allocations,
  // and also the history of actions.
  enum class Record { kNone, kState, kAll };
  // context=None / "state" / "alloc" / "all": no stacks, stacks of live
  // allocations, also of alloc actions, also of free actions.
  enum class Context { kNone, kState, kAlloc, kAll };
  Record record = Record::kNone;
  Context context = Context::kNone;
  bool cpp_frames = false;  // stacks="all"
  size_t max_entries = 0;
  bool clear_history = false;
  bool skip[kTraceActionCount] = {};
};

// The calling thread's stack; `cpp_frames` adds the C++ frames to the
// Python ones. Installed by the Python bindings, which know how.
using StackGatherer = std::function<std::shared_ptr<c10::GatheredContext>(bool cpp_frames)>;

// Thread-safe. Lock order: the allocator's lock, then this one; Gather
// takes the GIL and must be called without the allocator's lock.
class AllocatorHistory {
 public:
  void Configure(const HistoryOptions& options, StackGatherer gatherer);

  // The stack for an allocation (blocks keep it while they live) or for a
  // free, or nullptr when the options keep none.
  std::shared_ptr<c10::GatheredContext> GatherForAlloc();
  std::shared_ptr<c10::GatheredContext> GatherForFree();

  // Appends `entry` to its device's history when the options record it
  // (the oldest entry gives way past max_entries). Alloc entries keep their
  // stack only with context "alloc" or "all".
  void Record(TraceEntry entry);

  // Each device's history, oldest first; `devices` lists at least that many.
  std::vector<std::vector<TraceEntry>> Traces(size_t devices);

 private:
  std::shared_ptr<c10::GatheredContext> Gather(bool wanted);

  struct Ring {
    std::vector<TraceEntry> entries;
    size_t next = 0;  // the oldest entry once the ring is full
  };

  // What the options ask, readable without the lock: the allocator asks on
  // every allocation and free.
  std::atomic<bool> stacks_for_alloc_{false};
  std::atomic<bool> stacks_for_free_{false};
  std::atomic<bool> recording_{false};
  absl::Mutex mutex_;
  HistoryOptions options_ ABSL_GUARDED_BY(mutex_);
  StackGatherer gatherer_ ABSL_GUARDED_BY(mutex_);
  std::vector<Ring> rings_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_RUNTIME_ALLOCATOR_HISTORY_H_

// The caching allocator of device memory: large segments from neuron-rtd,
// split into blocks and reused without a round trip, stream-ordered (a block
// freed on its stream is reusable at once on that stream; record_stream
// defers reuse until other streams' work is done), as PyTorch's CUDA caching
// allocator does over cudaMalloc.
#ifndef TORCH_NEURONX_CSRC_RUNTIME_NEURON_ALLOCATOR_H_
#define TORCH_NEURONX_CSRC_RUNTIME_NEURON_ALLOCATOR_H_

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/StorageImpl.h>

#include <memory>
#include <optional>
#include <vector>

#include "csrc/runtime/AllocatorHistory.h"
#include "neuronrt/session.h"

namespace torch_neuronx {

// The allocator registered for the `neuron` device; lives until exit.
c10::DeviceAllocator& NeuronAllocator();

// Gives `storage` a new block of `new_bytes` on its own device, keeping the
// first min(old, new) bytes (stream-ordered copy on the current stream).
void ResizeNeuronStorage(c10::StorageImpl& storage, size_t new_bytes);

// The device whose memory holds `address`, when this process allocated it.
std::optional<c10::DeviceIndex> DeviceOfAddress(const void* address);

// The daemon buffer (segment) under `data` when this allocator gave it, and
// where `data` starts in it; nullopt for memory it did not give.
struct BufferSlice {
  neuronrt::DeviceBuffer buffer;
  uint64_t offset = 0;
};
std::optional<BufferSlice> AllocatedBuffer(const c10::DataPtr& data);

// torch.neuron.memory._record_memory_history.
void ConfigureAllocatorHistory(const HistoryOptions& options, StackGatherer gatherer);

struct BlockSnapshot {
  enum class State { kActiveAllocated, kActivePendingFree, kInactive };
  uint64_t address = 0;
  size_t size = 0;
  size_t requested = 0;
  State state = State::kInactive;
  std::shared_ptr<c10::GatheredContext> context;  // the allocation's stack
};

struct SegmentSnapshot {
  c10::DeviceIndex device = 0;
  uint64_t address = 0;
  size_t total_size = 0;
  c10::StreamId stream = 0;
  bool small = false;
  size_t allocated = 0;  // bytes of active_allocated blocks
  size_t active = 0;     // and of blocks waiting for other streams
  size_t requested = 0;
  std::vector<BlockSnapshot> blocks;  // in address order, covering the segment
  std::shared_ptr<c10::GatheredContext> context;  // stack of the segment's allocation
};

// torch.neuron.memory._snapshot: every segment of every device, and each
// device's recorded history (which gains a "snapshot" entry).
struct MemorySnapshot {
  std::vector<SegmentSnapshot> segments;
  std::vector<std::vector<TraceEntry>> device_traces;
};
MemorySnapshot TakeMemorySnapshot();

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_RUNTIME_NEURON_ALLOCATOR_H_

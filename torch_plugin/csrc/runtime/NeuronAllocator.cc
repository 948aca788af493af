#include "csrc/runtime/NeuronAllocator.h"

#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/COW.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "csrc/runtime/NeuronFunctions.h"

namespace torch_neuronx {
namespace {

using c10::CachingDeviceAllocator::DeviceStats;
using c10::CachingAllocator::StatType;

constexpr size_t kMinBlockBytes = 512;
// Requests up to 1 MiB share 2 MiB segments; larger ones get their own.
constexpr size_t kSmallRequestBytes = size_t{1} << 20;
constexpr size_t kSmallSegmentBytes = size_t{2} << 20;
constexpr size_t kLargeSegmentBytes = size_t{20} << 20;
constexpr size_t kMidRequestBytes = size_t{10} << 20;
constexpr size_t kLargeRoundBytes = size_t{2} << 20;

size_t RoundUp(size_t bytes, size_t unit) { return (bytes + unit - 1) / unit * unit; }

std::string Bytes(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30)) return absl::StrFormat("%.2f GiB", bytes / double(1 << 30));
  if (bytes >= (uint64_t{1} << 20)) return absl::StrFormat("%.2f MiB", bytes / double(1 << 20));
  return absl::StrFormat("%d bytes", bytes);
}

struct Block;

struct Segment {
  neuronrt::DeviceBuffer buffer;
  bool small = false;
  c10::StreamId stream = 0;
  Block* head = nullptr;  // the block at the segment's base address
  std::shared_ptr<c10::GatheredContext> context;  // stack of its allocation
};

// A piece of a segment. Free blocks of a device sit in its pools, ordered by
// (stream, size, address) so that a best fit on the same stream is one
// lower_bound away.
struct Block {
  c10::DeviceIndex device = 0;
  Segment* segment = nullptr;
  uint64_t address = 0;
  size_t size = 0;
  size_t requested = 0;
  bool allocated = false;
  Block* prev = nullptr;
  Block* next = nullptr;
  // Streams other than the segment's that used the block (record_stream).
  std::vector<c10::Stream> stream_uses;
  // Events still to complete before the block may be reused.
  int pending_events = 0;
  // Stacks of the allocation and of the free (memory history).
  std::shared_ptr<c10::GatheredContext> context;
  std::shared_ptr<c10::GatheredContext> free_context;

  c10::StreamId stream() const { return segment->stream; }
  bool small() const { return segment->small; }
};

struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const {
    return std::tie(a->segment->stream, a->size, a->address) <
           std::tie(b->segment->stream, b->size, b->address);
  }
};

struct DeviceState {
  std::set<Block*, BlockOrder> small_free;
  std::set<Block*, BlockOrder> large_free;
  std::map<uint64_t, std::unique_ptr<Segment>> segments;  // by base address
  std::deque<std::pair<neuronrt::Event, Block*>> pending;
  DeviceStats stats;

  std::set<Block*, BlockOrder>& pool(bool small) { return small ? small_free : large_free; }
};

void Update(DeviceStats& stats, c10::CachingAllocator::StatArray DeviceStats::*field, bool small,
            int64_t delta) {
  for (StatType type : {StatType::AGGREGATE, small ? StatType::SMALL_POOL : StatType::LARGE_POOL}) {
    c10::CachingAllocator::Stat& stat = (stats.*field)[static_cast<size_t>(type)];
    if (delta >= 0) {
      stat.increase(static_cast<size_t>(delta));
    } else {
      stat.decrease(static_cast<size_t>(-delta));
    }
  }
}

// The device's allocated and reserved bytes, as the profiler's memory
// events carry them.
struct Totals {
  size_t allocated = 0;
  size_t reserved = 0;
};

Totals TotalsOf(const DeviceStats& stats) {
  constexpr auto kAll = static_cast<size_t>(StatType::AGGREGATE);
  return Totals{.allocated = static_cast<size_t>(stats.allocated_bytes[kAll].current),
                .reserved = static_cast<size_t>(stats.reserved_bytes[kAll].current)};
}

// torch.profiler(profile_memory=True): every allocation and free, as CUDA's
// allocator reports them. Outside the allocator's lock.
void ReportToProfiler(uint64_t address, int64_t delta, Totals totals, c10::DeviceIndex device) {
  c10::reportMemoryUsageToProfiler(reinterpret_cast<void*>(address), delta, totals.allocated,
                                   totals.reserved,
                                   c10::Device(c10::DeviceType::PrivateUse1, device));
}

template <typename Visit>
void ForEachStat(DeviceStats& stats, Visit visit) {
  for (auto* array : {&stats.allocation, &stats.segment, &stats.active, &stats.inactive_split,
                      &stats.allocated_bytes, &stats.reserved_bytes, &stats.active_bytes,
                      &stats.inactive_split_bytes, &stats.requested_bytes}) {
    for (c10::CachingAllocator::Stat& stat : *array) visit(stat);
  }
}

class CachingAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t bytes) override {
    const c10::DeviceIndex device = CurrentDevice();
    const c10::Device where(c10::DeviceType::PrivateUse1, device);
    if (bytes == 0) return c10::DataPtr(nullptr, nullptr, &DeleteNothing, where);
    const c10::Stream stream = CurrentStream(device);
    Totals totals;
    Block* block = Malloc(device, stream.id(), bytes, totals, history_.GatherForAlloc());
    if (c10::memoryProfilingEnabled()) {
      ReportToProfiler(block->address, static_cast<int64_t>(block->size), totals, device);
    }
    // The context is the address itself, as copy-on-write storages
    // (torch._lazy_clone) require of the data pointers they wrap: the block
    // is found by its address, which stays the same under a copy-on-write
    // wrapper.
    void* address = reinterpret_cast<void*>(block->address);
    return c10::DataPtr(address, address, &FreeAt, where);
  }

  bool is_simple_data_ptr(const c10::DataPtr& data) const override {
    return data.get() == data.get_context();
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

  void copy_data(void* destination, const void* source, size_t count) const override {
    neuronrt::Stream& stream = RuntimeStream(CurrentStream(CurrentDevice()));
    ThrowIfError(stream
                     .CopyOnDevice(reinterpret_cast<uint64_t>(destination),
                                   reinterpret_cast<uint64_t>(source), count, "storage copy")
                     .status(),
                 "copying neuron storage");
  }

  bool initialized() override { return Runtime::GetIfOpen() != nullptr; }

  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {
    absl::MutexLock lock(&mutex_);
    for (size_t device = 0; device < devices_.size(); ++device) {
      if (devices_[device] == nullptr) continue;
      ProcessPending(*devices_[device]);
      ReleaseCached(*devices_[device]);
    }
  }

  std::optional<BufferSlice> SliceOf(const c10::DataPtr& data) {
    absl::MutexLock lock(&mutex_);
    const Block* block = BlockOf(data);
    if (block == nullptr) return std::nullopt;
    const neuronrt::DeviceBuffer& buffer = block->segment->buffer;
    return BufferSlice{
        .buffer = buffer,
        .offset = reinterpret_cast<uint64_t>(data.get()) - buffer.device_address};
  }

  void recordStream(const c10::DataPtr& data, c10::Stream stream) override {
    absl::MutexLock lock(&mutex_);
    Block* block = BlockOf(data);
    if (block == nullptr || stream.id() == block->stream()) return;
    if (std::find(block->stream_uses.begin(), block->stream_uses.end(), stream) ==
        block->stream_uses.end()) {
      block->stream_uses.push_back(stream);
    }
  }

  DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    absl::MutexLock lock(&mutex_);
    return State(device).stats;
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    absl::MutexLock lock(&mutex_);
    DeviceStats& stats = State(device).stats;
    ForEachStat(stats, [](c10::CachingAllocator::Stat& stat) { stat.reset_accumulated(); });
    stats.num_alloc_retries = 0;
    stats.num_ooms = 0;
    stats.num_device_alloc = 0;
    stats.num_device_free = 0;
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    absl::MutexLock lock(&mutex_);
    ForEachStat(State(device).stats,
                [](c10::CachingAllocator::Stat& stat) { stat.reset_peak(); });
  }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    CheckDevice(device);
    const auto [total, used] = DeviceMemory(device);
    return {total - std::min(total, used), total};
  }

  std::optional<c10::DeviceIndex> DeviceOf(uint64_t address) {
    absl::MutexLock lock(&mutex_);
    for (size_t device = 0; device < devices_.size(); ++device) {
      if (devices_[device] == nullptr) continue;
      auto& segments = devices_[device]->segments;
      auto it = segments.upper_bound(address);
      if (it == segments.begin()) continue;
      --it;
      if (address < it->first + it->second->buffer.size) {
        return static_cast<c10::DeviceIndex>(device);
      }
    }
    return std::nullopt;
  }

  void ConfigureHistory(const HistoryOptions& options, StackGatherer gatherer) {
    history_.Configure(options, std::move(gatherer));
  }

  MemorySnapshot Snapshot() {
    MemorySnapshot snapshot;
    absl::MutexLock lock(&mutex_);
    for (size_t device = 0; device < devices_.size(); ++device) {
      if (devices_[device] == nullptr) continue;
      for (const auto& [address, segment] : devices_[device]->segments) {
        snapshot.segments.push_back(SnapshotOf(static_cast<c10::DeviceIndex>(device), *segment));
      }
      history_.Record(TraceEntry{.action = TraceAction::kSnapshot,
                                 .device = static_cast<c10::DeviceIndex>(device)});
    }
    snapshot.device_traces = history_.Traces(devices_.size());
    return snapshot;
  }

 private:
  static void DeleteNothing(void* /*context*/) {}
  static void FreeAt(void* address);

  // The allocated block `data` points to: one of this allocator's data
  // pointers, or a copy-on-write one wrapping it (whose block stays
  // allocated while any of its copies lives). nullptr for other memory.
  Block* BlockOf(const c10::DataPtr& data) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (data.get_deleter() != &FreeAt && !c10::impl::cow::is_cow_data_ptr(data)) return nullptr;
    auto it = allocated_.find(reinterpret_cast<uint64_t>(data.get()));
    return it == allocated_.end() ? nullptr : it->second;
  }

  DeviceState& State(c10::DeviceIndex device) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (static_cast<size_t>(device) >= devices_.size()) devices_.resize(device + 1);
    if (devices_[device] == nullptr) devices_[device] = std::make_unique<DeviceState>();
    return *devices_[device];
  }

  // HBM of the chip holding `device`'s core: total and used (all processes).
  std::pair<uint64_t, uint64_t> DeviceMemory(c10::DeviceIndex device) {
    Runtime& runtime = GetRuntime();
    absl::StatusOr<std::vector<neuronrt::DeviceInfo>> chips =
        runtime.session().client().ListDevices();
    if (!chips.ok()) return {0, 0};
    const uint32_t core = runtime.core(device);
    for (const neuronrt::DeviceInfo& chip : *chips) {
      if (std::find(chip.cores.begin(), chip.cores.end(), core) != chip.cores.end()) {
        return {chip.hbm_total_bytes, chip.hbm_used_bytes};
      }
    }
    return {0, 0};
  }

  // `totals`: the device's after the allocation; `context`: the caller's
  // stack when the memory history keeps one.
  Block* Malloc(c10::DeviceIndex device, c10::StreamId stream, size_t requested, Totals& totals,
                std::shared_ptr<c10::GatheredContext> context) {
    const size_t size = RoundUp(requested, kMinBlockBytes);
    const bool small = size <= kSmallRequestBytes;
    absl::MutexLock lock(&mutex_);
    DeviceState& state = State(device);
    ProcessPending(state);
    Block* block = FindFree(state, stream, size, small);
    if (block == nullptr) {
      block = NewSegment(state, device, stream, size, small, requested, context);
    }
    block = Split(state, block, size);
    block->allocated = true;
    block->requested = requested;
    allocated_.emplace(block->address, block);
    history_.Record(TraceEntry{.action = TraceAction::kAlloc, .device = device,
                               .address = block->address, .size = block->size,
                               .stream = stream, .context = context});
    block->context = std::move(context);
    Update(state.stats, &DeviceStats::allocation, small, 1);
    Update(state.stats, &DeviceStats::active, small, 1);
    Update(state.stats, &DeviceStats::allocated_bytes, small, static_cast<int64_t>(block->size));
    Update(state.stats, &DeviceStats::active_bytes, small, static_cast<int64_t>(block->size));
    Update(state.stats, &DeviceStats::requested_bytes, small, static_cast<int64_t>(requested));
    totals = TotalsOf(state.stats);
    return block;
  }

  Block* FindFree(DeviceState& state, c10::StreamId stream, size_t size, bool small)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    std::set<Block*, BlockOrder>& pool = state.pool(small);
    Segment key{.stream = stream};
    Block probe{.segment = &key, .address = 0, .size = size};
    auto it = pool.lower_bound(&probe);
    if (it == pool.end() || (*it)->stream() != stream) return nullptr;
    Block* block = *it;
    pool.erase(it);
    return block;
  }

  Block* NewSegment(DeviceState& state, c10::DeviceIndex device, c10::StreamId stream,
                    size_t size, bool small, size_t requested,
                    const std::shared_ptr<c10::GatheredContext>& context)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    const size_t segment_bytes = small                       ? kSmallSegmentBytes
                                 : size < kMidRequestBytes ? kLargeSegmentBytes
                                                           : RoundUp(size, kLargeRoundBytes);
    Runtime& runtime = GetRuntime();
    absl::StatusOr<neuronrt::DeviceBuffer> buffer =
        runtime.session().Allocate(runtime.core(device), segment_bytes);
    if (!buffer.ok() && buffer.status().code() == absl::StatusCode::kResourceExhausted) {
      // Cached blocks go back to the daemon, then one more try.
      ++state.stats.num_alloc_retries;
      for (auto& [point, block] : state.pending) (void)point.Synchronize();
      ProcessPending(state);
      ReleaseCached(state);
      buffer = runtime.session().Allocate(runtime.core(device), segment_bytes);
    }
    if (!buffer.ok()) {
      if (buffer.status().code() == absl::StatusCode::kResourceExhausted) {
        ++state.stats.num_ooms;
        const auto [total, used] = DeviceMemory(device);
        const auto aggregate = static_cast<size_t>(StatType::AGGREGATE);
        history_.Record(TraceEntry{.action = TraceAction::kOom, .device = device,
                                   .size = requested, .stream = stream,
                                   .device_free = total - std::min(total, used),
                                   .context = context});
        if (c10::memoryProfilingEnabled()) {
          const Totals totals = TotalsOf(state.stats);
          c10::reportOutOfMemoryToProfiler(static_cast<int64_t>(requested), totals.allocated,
                                           totals.reserved,
                                           c10::Device(c10::DeviceType::PrivateUse1, device));
        }
        TORCH_CHECK_WITH(
            OutOfMemoryError, false,
            absl::StrFormat(
                "neuron:%d out of memory: tried to allocate %s. The device (core %d) has %s in "
                "all, %s in use by every process; this process holds %s in tensors and %s "
                "reserved by its caching allocator. neuron-rtd said: %s",
                device, Bytes(requested), runtime.core(device), Bytes(total), Bytes(used),
                Bytes(state.stats.allocated_bytes[aggregate].current),
                Bytes(state.stats.reserved_bytes[aggregate].current),
                std::string(buffer.status().message())));
      }
      ThrowIfError(buffer.status(), absl::StrFormat("allocating %s on neuron:%d",
                                                    Bytes(segment_bytes), device));
    }
    auto segment = std::make_unique<Segment>(
        Segment{.buffer = *buffer, .small = small, .stream = stream, .context = context});
    auto* block = new Block{.device = device,
                            .segment = segment.get(),
                            .address = buffer->device_address,
                            .size = segment_bytes};
    segment->head = block;
    state.segments.emplace(buffer->device_address, std::move(segment));
    history_.Record(TraceEntry{.action = TraceAction::kSegmentAlloc, .device = device,
                               .address = buffer->device_address, .size = segment_bytes,
                               .stream = stream, .context = context});
    ++state.stats.num_device_alloc;
    Update(state.stats, &DeviceStats::segment, small, 1);
    Update(state.stats, &DeviceStats::reserved_bytes, small, static_cast<int64_t>(segment_bytes));
    return block;
  }

  // Cuts `block` to `size` when the rest is worth keeping; the rest joins
  // the pool.
  Block* Split(DeviceState& state, Block* block, size_t size) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    const size_t rest = block->size - size;
    const bool keep_rest = block->small() ? rest >= kMinBlockBytes : rest > kSmallRequestBytes;
    if (!keep_rest) return block;
    auto* remainder = new Block{.device = block->device,
                                .segment = block->segment,
                                .address = block->address + size,
                                .size = rest,
                                .prev = block,
                                .next = block->next};
    if (block->next != nullptr) block->next->prev = remainder;
    block->next = remainder;
    block->size = size;
    state.pool(block->small()).insert(remainder);
    return block;
  }

 public:
  void Free(uint64_t address) {
    // A forked child's blocks belong to the parent's session: leave them.
    if (Runtime::InBadFork()) return;
    std::shared_ptr<c10::GatheredContext> context = history_.GatherForFree();
    Totals totals;
    int64_t size = 0;
    c10::DeviceIndex device = 0;
    {
      absl::MutexLock lock(&mutex_);
      auto it = allocated_.find(address);
      if (it == allocated_.end()) return;
      Block* block = it->second;
      allocated_.erase(it);
      size = static_cast<int64_t>(block->size);
      device = block->device;
      totals = FreeLocked(block, std::move(context));
    }
    if (c10::memoryProfilingEnabled()) ReportToProfiler(address, -size, totals, device);
  }

 private:
  // Frees `block`; returns its device's totals after.
  Totals FreeLocked(Block* block, std::shared_ptr<c10::GatheredContext> context)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    DeviceState& state = State(block->device);
    const bool small = block->small();
    history_.Record(TraceEntry{.action = TraceAction::kFreeRequested, .device = block->device,
                               .address = block->address, .size = block->size,
                               .stream = block->stream(), .context = context});
    block->free_context = std::move(context);
    Update(state.stats, &DeviceStats::allocation, small, -1);
    Update(state.stats, &DeviceStats::allocated_bytes, small, -static_cast<int64_t>(block->size));
    Update(state.stats, &DeviceStats::requested_bytes, small,
           -static_cast<int64_t>(block->requested));
    if (!block->stream_uses.empty()) {
      // Other streams may still read or write the block: it is reusable
      // once each of them has reached this point.
      for (const c10::Stream& stream : block->stream_uses) {
        absl::StatusOr<neuronrt::Event> point = RuntimeStream(stream).Record();
        if (!point.ok()) continue;  // a failed stream runs nothing more
        state.pending.emplace_back(*point, block);
        ++block->pending_events;
      }
      block->stream_uses.clear();
      if (block->pending_events > 0) return TotalsOf(state.stats);
    }
    Release(state, block);
    return TotalsOf(state.stats);
  }

  void ProcessPending(DeviceState& state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    while (!state.pending.empty()) {
      auto& [point, block] = state.pending.front();
      absl::StatusOr<bool> done = point.Query();
      if (done.ok() && !*done) break;
      Block* ready = block;
      state.pending.pop_front();
      if (--ready->pending_events == 0) Release(state, ready);
    }
  }

  // Returns a block no stream uses any more to its pool, merged with free
  // neighbours.
  void Release(DeviceState& state, Block* block) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    const bool small = block->small();
    Update(state.stats, &DeviceStats::active, small, -1);
    Update(state.stats, &DeviceStats::active_bytes, small, -static_cast<int64_t>(block->size));
    history_.Record(TraceEntry{.action = TraceAction::kFreeCompleted, .device = block->device,
                               .address = block->address, .size = block->size,
                               .stream = block->stream(),
                               .context = std::move(block->free_context)});
    block->free_context = nullptr;
    block->context = nullptr;
    block->allocated = false;
    std::set<Block*, BlockOrder>& pool = state.pool(small);
    for (Block* neighbour : {block->prev, block->next}) {
      if (neighbour == nullptr || neighbour->allocated || neighbour->pending_events > 0) continue;
      pool.erase(neighbour);
      if (neighbour == block->prev) {
        if (block->segment->head == neighbour) block->segment->head = block;
        block->address = neighbour->address;
        block->prev = neighbour->prev;
        if (block->prev != nullptr) block->prev->next = block;
      } else {
        block->next = neighbour->next;
        if (block->next != nullptr) block->next->prev = block;
      }
      block->size += neighbour->size;
      delete neighbour;
    }
    pool.insert(block);
  }

  // Gives every wholly free segment back to the daemon.
  void ReleaseCached(DeviceState& state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    Runtime* runtime = Runtime::GetIfOpen();
    if (runtime == nullptr) return;
    for (bool small : {true, false}) {
      std::set<Block*, BlockOrder>& pool = state.pool(small);
      for (auto it = pool.begin(); it != pool.end();) {
        Block* block = *it;
        if (block->prev != nullptr || block->next != nullptr) {
          ++it;
          continue;
        }
        it = pool.erase(it);
        Segment* segment = block->segment;
        (void)runtime->session().Free(segment->buffer);
        history_.Record(TraceEntry{.action = TraceAction::kSegmentFree, .device = block->device,
                                   .address = segment->buffer.device_address,
                                   .size = segment->buffer.size, .stream = segment->stream});
        ++state.stats.num_device_free;
        Update(state.stats, &DeviceStats::segment, small, -1);
        Update(state.stats, &DeviceStats::reserved_bytes, small,
               -static_cast<int64_t>(segment->buffer.size));
        state.segments.erase(segment->buffer.device_address);
        delete block;
      }
    }
  }

  static SegmentSnapshot SnapshotOf(c10::DeviceIndex device, const Segment& segment) {
    SegmentSnapshot snapshot{.device = device,
                             .address = segment.buffer.device_address,
                             .total_size = segment.buffer.size,
                             .stream = segment.stream,
                             .small = segment.small,
                             .context = segment.context};
    for (const Block* block = segment.head; block != nullptr; block = block->next) {
      using State = BlockSnapshot::State;
      const State state = !block->allocated            ? State::kInactive
                          : block->pending_events > 0 ? State::kActivePendingFree
                                                      : State::kActiveAllocated;
      if (state != State::kInactive) snapshot.active += block->size;
      if (state == State::kActiveAllocated) {
        snapshot.allocated += block->size;
        snapshot.requested += block->requested;
      }
      snapshot.blocks.push_back(BlockSnapshot{.address = block->address,
                                              .size = block->size,
                                              .requested = block->allocated ? block->requested : 0,
                                              .state = state,
                                              .context = block->context});
    }
    return snapshot;
  }

  // Taken after mutex_ when both are (AllocatorHistory's lock order).
  AllocatorHistory history_;
  absl::Mutex mutex_;
  std::vector<std::unique_ptr<DeviceState>> devices_ ABSL_GUARDED_BY(mutex_);
  // Allocated blocks by address (addresses are unique across the session's
  // devices).
  absl::flat_hash_map<uint64_t, Block*> allocated_ ABSL_GUARDED_BY(mutex_);
};

CachingAllocator* allocator = new CachingAllocator();

void CachingAllocator::FreeAt(void* address) {
  allocator->Free(reinterpret_cast<uint64_t>(address));
}

}  // namespace

c10::DeviceAllocator& NeuronAllocator() { return *allocator; }

void ResizeNeuronStorage(c10::StorageImpl& storage, size_t new_bytes) {
  TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
  const size_t old_bytes = storage.nbytes();
  if (new_bytes == old_bytes) return;
  const c10::DeviceGuard guard(storage.device());
  c10::DataPtr fresh = allocator->allocate(new_bytes);
  const size_t keep = std::min(old_bytes, new_bytes);
  if (keep > 0) allocator->copy_data(fresh.get(), storage.data(), keep);
  storage.set_data_ptr_noswap(std::move(fresh));
  storage.set_nbytes(new_bytes);
}

std::optional<c10::DeviceIndex> DeviceOfAddress(const void* address) {
  return allocator->DeviceOf(reinterpret_cast<uint64_t>(address));
}

std::optional<BufferSlice> AllocatedBuffer(const c10::DataPtr& data) {
  return allocator->SliceOf(data);
}

void ConfigureAllocatorHistory(const HistoryOptions& options, StackGatherer gatherer) {
  allocator->ConfigureHistory(options, std::move(gatherer));
}

MemorySnapshot TakeMemorySnapshot() { return allocator->Snapshot(); }

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, allocator);

}  // namespace torch_neuronx

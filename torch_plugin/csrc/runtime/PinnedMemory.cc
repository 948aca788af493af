#include "csrc/runtime/PinnedMemory.h"

#include <c10/util/Exception.h>

#include <map>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "csrc/runtime/NeuronFunctions.h"

namespace torch_neuronx {
namespace {

struct PinnedBlock {
  std::shared_ptr<neuronrt::HostBuffer> buffer;
  std::vector<neuronrt::Event> uses;
  bool in_use = false;
};

class CachingPinnedAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) override {
    if (bytes == 0) return c10::DataPtr(nullptr, c10::Device(c10::kCPU));
    const size_t size = RoundUp(bytes);
    absl::MutexLock lock(&mutex_);
    for (auto& [address, block] : blocks_) {
      if (block->in_use || block->buffer->size() != size || !Idle(*block)) continue;
      block->in_use = true;
      return c10::DataPtr(block->buffer->data(), block.get(), &Release, c10::Device(c10::kCPU));
    }
    absl::StatusOr<std::shared_ptr<neuronrt::HostBuffer>> buffer =
        GetRuntime().session().AllocateHost(size);
    ThrowIfError(buffer.status(), "allocating pinned host memory");
    auto block = std::make_unique<PinnedBlock>(PinnedBlock{.buffer = *buffer, .in_use = true});
    void* data = (*buffer)->data();
    PinnedBlock* raw = block.get();
    blocks_.emplace(reinterpret_cast<uintptr_t>(data), std::move(block));
    return c10::DataPtr(data, raw, &Release, c10::Device(c10::kCPU));
  }

  void copy_data(void* destination, const void* source, size_t count) const override {
    default_copy_data(destination, source, count);
  }

  PinnedBlock* Find(const void* data, uint64_t* offset) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    const auto address = reinterpret_cast<uintptr_t>(data);
    auto it = blocks_.upper_bound(address);
    if (it == blocks_.begin()) return nullptr;
    --it;
    if (address >= it->first + it->second->buffer->size()) return nullptr;
    if (offset != nullptr) *offset = address - it->first;
    return it->second.get();
  }

  absl::Mutex mutex_;

 private:
  // Power-of-two classes from 4 KiB keep the cache small and reusable.
  static size_t RoundUp(size_t bytes) {
    size_t size = 4096;
    while (size < bytes) size <<= 1;
    return size;
  }

  static bool Idle(PinnedBlock& block) {
    std::erase_if(block.uses, [](const neuronrt::Event& use) {
      absl::StatusOr<bool> done = use.Query();
      return !done.ok() || *done;
    });
    return block.uses.empty();
  }

  static void Release(void* context);

  std::map<uintptr_t, std::unique_ptr<PinnedBlock>> blocks_ ABSL_GUARDED_BY(mutex_);
};

CachingPinnedAllocator* pinned = new CachingPinnedAllocator();

void CachingPinnedAllocator::Release(void* context) {
  absl::MutexLock lock(&pinned->mutex_);
  static_cast<PinnedBlock*>(context)->in_use = false;
}

}  // namespace

c10::Allocator& PinnedAllocator() { return *pinned; }

const neuronrt::HostBuffer* FindPinned(const void* data, uint64_t* offset) {
  absl::MutexLock lock(&pinned->mutex_);
  PinnedBlock* block = pinned->Find(data, offset);
  return block == nullptr ? nullptr : block->buffer.get();
}

void RecordPinnedUse(const void* data, const neuronrt::Event& done) {
  absl::MutexLock lock(&pinned->mutex_);
  if (PinnedBlock* block = pinned->Find(data, nullptr)) block->uses.push_back(done);
}

}  // namespace torch_neuronx

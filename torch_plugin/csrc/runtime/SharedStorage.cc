#include "csrc/runtime/SharedStorage.h"

#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "csrc/runtime/NeuronAllocator.h"
#include "csrc/runtime/NeuronFunctions.h"

namespace torch_neuronx {
namespace {

// The context of an opened storage's DataPtr: the imported buffer, freed
// (one hold of the segment) with the storage.
struct OpenedBuffer {
  neuronrt::DeviceBuffer buffer;
};

void FreeOpened(void* context) {
  std::unique_ptr<OpenedBuffer> opened(static_cast<OpenedBuffer*>(context));
  // A forked child's storages belong to the parent's session: leave them.
  if (Runtime::InBadFork()) return;
  if (Runtime* runtime = Runtime::GetIfOpen(); runtime != nullptr) {
    (void)runtime->session().Free(opened->buffer);
  }
}

std::optional<BufferSlice> SliceOf(const c10::DataPtr& data) {
  if (std::optional<BufferSlice> allocated = AllocatedBuffer(data)) return allocated;
  if (data.get_deleter() != &FreeOpened) return std::nullopt;
  const auto* opened = static_cast<const OpenedBuffer*>(data.get_context());
  return BufferSlice{
      .buffer = opened->buffer,
      .offset = reinterpret_cast<uint64_t>(data.get()) - opened->buffer.device_address};
}

// Storages sent to other processes, kept alive (their blocks not reused by
// the caching allocator) until the daemon says no other process may still
// use their segments, as CUDA's IPC reference counts keep a sent block. A
// handle never redeemed (a message lost) keeps its storage until exit, as
// with CUDA.
class SentStorages {
 public:
  void Keep(c10::Storage storage, uint64_t segment_id) {
    absl::MutexLock lock(&mutex_);
    sent_.push_back(Sent{.storage = std::move(storage), .segment_id = segment_id});
  }

  // Lets go of the storages whose segments no other process uses.
  void ReleaseReturned(neuronrt::Session& session) {
    std::vector<uint64_t> segment_ids;
    {
      absl::MutexLock lock(&mutex_);
      for (const Sent& sent : sent_) segment_ids.push_back(sent.segment_id);
    }
    if (segment_ids.empty()) return;
    std::sort(segment_ids.begin(), segment_ids.end());
    segment_ids.erase(std::unique(segment_ids.begin(), segment_ids.end()), segment_ids.end());
    if (segment_ids.size() > kMaxAsked) segment_ids.resize(kMaxAsked);
    absl::StatusOr<std::vector<uint64_t>> in_use = session.SharedSegmentsInUse(segment_ids);
    if (!in_use.ok()) return;  // kept until a later share asks again
    const absl::flat_hash_set<uint64_t> busy(in_use->begin(), in_use->end());
    const absl::flat_hash_set<uint64_t> asked(segment_ids.begin(), segment_ids.end());
    std::vector<Sent> released;
    {
      absl::MutexLock lock(&mutex_);
      auto returned = std::stable_partition(sent_.begin(), sent_.end(), [&](const Sent& sent) {
        return !asked.contains(sent.segment_id) || busy.contains(sent.segment_id);
      });
      std::move(returned, sent_.end(), std::back_inserter(released));
      sent_.erase(returned, sent_.end());
    }
    // `released` frees its blocks here, outside the lock.
  }

 private:
  static constexpr size_t kMaxAsked = 65536;
  struct Sent {
    c10::Storage storage;
    uint64_t segment_id = 0;
  };
  absl::Mutex mutex_;
  std::vector<Sent> sent_ ABSL_GUARDED_BY(mutex_);
};

SentStorages& ProcessSentStorages() {
  static auto* sent = new SentStorages();
  return *sent;
}

}  // namespace

StorageHandle ShareStorage(const c10::Storage& storage) {
  TORCH_CHECK(storage.device_type() == c10::DeviceType::PrivateUse1,
              "only neuron storages are shared through neuron-rtd, not ", storage.device());
  StorageHandle handle{.nbytes = storage.nbytes()};
  if (storage.nbytes() == 0) return handle;
  std::optional<BufferSlice> slice = SliceOf(storage.data_ptr());
  TORCH_CHECK(slice.has_value(),
              "this neuron storage cannot be shared with another process: its memory was not "
              "allocated by torch_neuronx's allocator (e.g. it wraps memory with from_blob)");
  const c10::DeviceIndex device = storage.device().index();
  ThrowIfError(RuntimeStream(CurrentStream(device)).Synchronize(),
               "waiting for the work that writes a shared storage");
  neuronrt::Session& session = GetRuntime().session();
  ProcessSentStorages().ReleaseReturned(session);
  absl::StatusOr<std::string> segment_handle = session.Share(slice->buffer);
  ThrowIfError(segment_handle.status(), "sharing a neuron storage");
  ProcessSentStorages().Keep(storage, slice->buffer.segment_id);
  handle.segment_handle = *std::move(segment_handle);
  handle.offset = slice->offset;
  return handle;
}

c10::Storage OpenSharedStorage(const StorageHandle& handle) {
  Runtime& runtime = GetRuntime();
  std::optional<c10::DeviceIndex> device;
  c10::DataPtr data;
  if (handle.nbytes == 0) {
    device = CurrentDevice();
    data = c10::DataPtr(nullptr, c10::Device(c10::DeviceType::PrivateUse1, *device));
  } else {
    absl::StatusOr<neuronrt::DeviceBuffer> buffer = runtime.session().Import(handle.segment_handle);
    ThrowIfError(buffer.status(), "opening a neuron storage another process shared");
    absl::Cleanup release = [&] { (void)runtime.session().Free(*buffer); };
    for (int index = 0; index < runtime.device_count(); ++index) {
      if (runtime.core(index) == buffer->core) device = static_cast<c10::DeviceIndex>(index);
    }
    TORCH_CHECK(device.has_value(), "the shared neuron storage is in the memory of core ",
                buffer->core, ", which this process does not use (NEURON_RT_VISIBLE_CORES)");
    TORCH_CHECK_VALUE(handle.offset <= buffer->size && handle.nbytes <= buffer->size - handle.offset,
                      "a shared neuron storage of ", handle.nbytes, " bytes at offset ",
                      handle.offset, " does not fit its segment of ", buffer->size, " bytes");
    void* address = reinterpret_cast<void*>(buffer->device_address + handle.offset);
    data = c10::DataPtr(address, new OpenedBuffer{.buffer = *buffer}, &FreeOpened,
                        c10::Device(c10::DeviceType::PrivateUse1, *device));
    std::move(release).Cancel();
  }
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), handle.nbytes, std::move(data), &NeuronAllocator(),
      /*resizable=*/false));
}

}  // namespace torch_neuronx

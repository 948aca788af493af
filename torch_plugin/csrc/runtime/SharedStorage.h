// Neuron storages shared between processes (torch.multiprocessing): the
// sender gets a handle to the daemon segment under a storage, the receiver
// opens it as a storage of its own over the same device memory.
//
// As with CUDA's IPC, the memory is not copied: writes by either process are
// seen by the other once ordered by synchronisation. The sender keeps what it
// sent alive (its caching allocator does not reuse the block) until no other
// process may use it; the receiver's storage holds the daemon segment, so
// the memory outlives the sender's process.
#ifndef TORCH_NEURONX_CSRC_RUNTIME_SHARED_STORAGE_H_
#define TORCH_NEURONX_CSRC_RUNTIME_SHARED_STORAGE_H_

#include <c10/core/Storage.h>

#include <cstdint>
#include <string>

namespace torch_neuronx {

struct StorageHandle {
  std::string segment_handle;  // the daemon's, opaque
  uint64_t offset = 0;         // of the storage in the segment
  uint64_t nbytes = 0;
};

// A handle to `storage`, after the work queued on its device's current
// stream (which may write it) has run. Throws for a storage whose memory
// this process's allocator did not give and did not open.
StorageHandle ShareStorage(const c10::Storage& storage);

// A storage over the memory `handle` names, on the device of this process
// that has its core. Throws (ValueError, RuntimeError) when the handle is
// unknown, another user's, or its memory is on a core this process does not
// use.
c10::Storage OpenSharedStorage(const StorageHandle& handle);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_RUNTIME_SHARED_STORAGE_H_

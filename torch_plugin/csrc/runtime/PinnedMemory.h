// Pinned host memory: buffers shared with neuron-rtd, so copies to and from
// them need no staging and run asynchronously (non_blocking=True). Freed
// buffers are cached; one still read or written by a queued copy is reused
// only after that copy is done.
#ifndef TORCH_NEURONX_CSRC_RUNTIME_PINNED_MEMORY_H_
#define TORCH_NEURONX_CSRC_RUNTIME_PINNED_MEMORY_H_

#include <c10/core/Allocator.h>

#include <cstdint>

#include "neuronrt/session.h"

namespace torch_neuronx {

c10::Allocator& PinnedAllocator();

// The pinned buffer holding `data`, and `data`'s offset in it; nullptr when
// `data` is not pinned memory of this process.
const neuronrt::HostBuffer* FindPinned(const void* data, uint64_t* offset);

// Keeps the pinned buffer holding `data` from reuse until `done` completes.
void RecordPinnedUse(const void* data, const neuronrt::Event& done);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_RUNTIME_PINNED_MEMORY_H_

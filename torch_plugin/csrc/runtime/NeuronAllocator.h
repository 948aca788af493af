// The caching allocator of device memory: large segments from neuron-rtd,
// split into blocks and reused without a round trip, stream-ordered (a block
// freed on its stream is reusable at once on that stream; record_stream
// defers reuse until other streams' work is done), as PyTorch's CUDA caching
// allocator does over cudaMalloc.
#ifndef TORCH_NEURONX_CSRC_RUNTIME_NEURON_ALLOCATOR_H_
#define TORCH_NEURONX_CSRC_RUNTIME_NEURON_ALLOCATOR_H_

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/StorageImpl.h>

#include <optional>

namespace torch_neuronx {

// The allocator registered for the `neuron` device; lives until exit.
c10::DeviceAllocator& NeuronAllocator();

// Gives `storage` a new block of `new_bytes` on its own device, keeping the
// first min(old, new) bytes (stream-ordered copy on the current stream).
void ResizeNeuronStorage(c10::StorageImpl& storage, size_t new_bytes);

// The device whose memory holds `address`, when this process allocated it.
std::optional<c10::DeviceIndex> DeviceOfAddress(const void* address);

}  // namespace torch_neuronx

#endif  // TORCH_NEURONX_CSRC_RUNTIME_NEURON_ALLOCATOR_H_

// Copies in every direction. Dense same-dtype copies are single data-plane
// commands (pinned host memory: asynchronous with non_blocking=True); the
// rest convert on the host (CPU side) or run aten::copy_ in the daemon
// (device side: strides, dtype casts, broadcasting).
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/_conj.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/conj_physical.h>
#include <ATen/ops/neg.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "csrc/aten/GenericOp.h"
#include "csrc/runtime/NeuronFunctions.h"
#include "csrc/runtime/PinnedMemory.h"

namespace torch_neuronx {
namespace {

bool IsNeuron(const at::Tensor& tensor) {
  return tensor.device().type() == c10::DeviceType::PrivateUse1;
}

// A copy's source is only read: a copy-on-write (lazily cloned) source stays
// shared; the destination is copied out of its sharing first.
uint64_t SourceAddress(const at::Tensor& tensor) {
  return reinterpret_cast<uint64_t>(tensor.const_data_ptr());
}
uint64_t DestinationAddress(const at::Tensor& tensor) {
  return reinterpret_cast<uint64_t>(tensor.mutable_data_ptr());
}

neuronrt::Stream& StreamOf(const at::Tensor& tensor) {
  return RuntimeStream(CurrentStream(tensor.device().index()));
}

// aten::copy_ run by the daemon on two tensors of one device.
void CopyInDaemon(const at::Tensor& destination, const at::Tensor& source) {
  static const c10::OperatorHandle copy =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::copy_", "");
  torch::jit::Stack stack{destination, source, false};
  LaunchOnDevice(copy, &stack);
}

// Host (contiguous, destination's dtype and size) -> dense device tensor.
void Upload(const at::Tensor& destination, const at::Tensor& host, bool non_blocking) {
  neuronrt::Stream& stream = StreamOf(destination);
  const uint64_t bytes = host.nbytes();
  uint64_t offset = 0;
  if (const neuronrt::HostBuffer* pinned = FindPinned(host.data_ptr(), &offset)) {
    absl::StatusOr<neuronrt::Event> done =
        stream.CopyToDevice(DestinationAddress(destination), *pinned, offset, bytes, "copy host to neuron");
    ThrowIfError(done.status(), "copying to neuron");
    RecordPinnedUse(host.data_ptr(), *done);
    if (!non_blocking) ThrowIfError(done->Synchronize(), "copying to neuron");
    return;
  }
  ThrowIfError(
      stream.CopyToDevice(DestinationAddress(destination), host.const_data_ptr(), bytes, "copy host to neuron")
          .status(),
      "copying to neuron");
}

// Dense device tensor -> host (contiguous, same dtype and size).
void Download(const at::Tensor& host, const at::Tensor& source, bool non_blocking) {
  neuronrt::Stream& stream = StreamOf(source);
  const uint64_t bytes = source.nbytes();
  uint64_t offset = 0;
  if (const neuronrt::HostBuffer* pinned = FindPinned(host.data_ptr(), &offset)) {
    absl::StatusOr<neuronrt::Event> done =
        stream.CopyToHost(*pinned, offset, SourceAddress(source), bytes, "copy neuron to host");
    ThrowIfError(done.status(), "copying from neuron");
    RecordPinnedUse(host.data_ptr(), *done);
    if (!non_blocking) ThrowIfError(done->Synchronize(), "copying from neuron");
    return;
  }
  ThrowIfError(stream.CopyToHost(host.mutable_data_ptr(), SourceAddress(source), bytes, "copy neuron to host"),
               "copying from neuron");
}

bool Dense(const at::Tensor& tensor) { return tensor.is_contiguous(); }

void HostToDevice(const at::Tensor& source, const at::Tensor& destination, bool non_blocking) {
  at::Tensor host = source.to(destination.scalar_type()).expand_as(destination).contiguous();
  if (Dense(destination)) {
    Upload(destination, host, non_blocking);
    return;
  }
  const c10::DeviceGuard guard(destination.device());
  at::Tensor staged = at::empty(destination.sizes(), destination.options());
  Upload(staged, host, non_blocking);
  CopyInDaemon(destination, staged);
}

void DeviceToHost(const at::Tensor& source, const at::Tensor& destination, bool non_blocking) {
  const c10::DeviceGuard guard(source.device());
  at::Tensor dense = Dense(source) ? source : source.contiguous();
  if (Dense(destination) && destination.scalar_type() == source.scalar_type() &&
      destination.sizes().equals(source.sizes())) {
    Download(destination, dense, non_blocking);
    return;
  }
  at::Tensor host = at::empty(dense.sizes(), dense.options().device(c10::kCPU));
  Download(host, dense, /*non_blocking=*/false);
  destination.copy_(host);
}

void DeviceToDevice(const at::Tensor& source, const at::Tensor& destination) {
  const c10::DeviceGuard guard(destination.device());
  const bool same_layout = source.scalar_type() == destination.scalar_type() &&
                           source.sizes().equals(destination.sizes()) && Dense(source) &&
                           Dense(destination);
  if (source.device() == destination.device()) {
    if (same_layout) {
      ThrowIfError(StreamOf(destination)
                       .CopyOnDevice(DestinationAddress(destination), SourceAddress(source), source.nbytes(),
                                     "copy neuron to neuron")
                       .status(),
                   "copying on neuron");
    } else {
      CopyInDaemon(destination, source);
    }
    return;
  }
  // Across devices: a dense copy on the source device, one data-plane copy
  // into a dense tensor on the destination device, then the layout there.
  at::Tensor dense;
  {
    const c10::DeviceGuard source_guard(source.device());
    dense = source.to(destination.scalar_type()).expand_as(destination).contiguous();
    // The destination's stream must not read before the source device wrote.
    absl::StatusOr<neuronrt::Event> written = StreamOf(source).Record();
    ThrowIfError(written.status(), "copying across neuron devices");
    ThrowIfError(StreamOf(destination).Wait(*written), "copying across neuron devices");
  }
  at::Tensor landing = Dense(destination) ? destination : at::empty(destination.sizes(), destination.options());
  ThrowIfError(StreamOf(destination)
                   .CopyOnDevice(DestinationAddress(landing), SourceAddress(dense), dense.nbytes(),
                                 "copy across neuron devices")
                   .status(),
               "copying across neuron devices");
  if (!landing.is_same(destination)) CopyInDaemon(destination, landing);
}

at::Tensor CopyFrom(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);

// Conjugate and negative bits: metadata over unchanged data (ifft's result,
// conj(), _neg_view). A source's bits are applied on its device
// (conj_physical, neg), then copied; a destination with a bit receives the
// source with the same bit applied, written into its data without the bit.
// This is how the CPU's and CUDA's copy kernels resolve them. (Left to
// PyTorch's fallback, the copy materializes the source with a clone, whose
// copy comes back here: endless recursion.)
at::Tensor CopyResolvingBits(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  if (dst.is_conj()) {
    CopyFrom(self.conj(), at::_conj(dst), non_blocking);
    return dst;
  }
  if (dst.is_neg()) {
    CopyFrom(at::_neg_view(self), at::_neg_view(dst), non_blocking);
    return dst;
  }
  at::Tensor source = self;
  if (source.is_conj()) source = at::conj_physical(at::_conj(source));
  if (source.is_neg()) source = at::neg(at::_neg_view(source));
  return CopyFrom(source, dst, non_blocking);
}

at::Tensor CopyFrom(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  if (self.is_conj() || self.is_neg() || dst.is_conj() || dst.is_neg()) {
    return CopyResolvingBits(self, dst, non_blocking);
  }
  TORCH_CHECK(self.sizes().equals(dst.sizes()) || self.numel() == 1 ||
                  at::infer_size(self.sizes(), dst.sizes()) == dst.sizes(),
              "copy_: cannot copy a tensor of shape ", self.sizes(), " into one of shape ",
              dst.sizes());
  if (dst.numel() == 0) return dst;
  // The CPU's and CUDA's copy_ (a TensorIterator's checks): a destination
  // whose elements share memory, or that shares some of the source's, is
  // refused; copy_ leaves a source viewing the same data alone before here.
  at::assert_no_internal_overlap(dst);
  if (IsNeuron(self) && IsNeuron(dst)) {
    at::assert_no_partial_overlap(dst, self);
    DeviceToDevice(self, dst);
  } else if (IsNeuron(dst)) {
    TORCH_CHECK(self.device().is_cpu(), "copy_: from ", self.device(), " to neuron");
    HostToDevice(self, dst, non_blocking);
  } else {
    TORCH_CHECK(dst.device().is_cpu(), "copy_: from neuron to ", dst.device());
    DeviceToHost(self, dst, non_blocking);
  }
  return dst;
}

at::Tensor CopyFromAndResize(const at::Tensor& self, const at::Tensor& dst) {
  if (!dst.sizes().equals(self.sizes())) dst.resize_(self.sizes());
  return CopyFrom(self, dst, false);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_copy_from", CopyFrom);
  m.impl("_copy_from_and_resize", CopyFromAndResize);
}

// The copies resolve conjugate and negative bits themselves (CopyFrom).
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

}  // namespace torch_neuronx

// Calls whose list arguments take more tensors, or per-call scalar bytes,
// than one LAUNCH carries. Two kinds of operator split without changing
// their results:
//
//   - per-element operators (_foreach_*, the _fused_* optimizers, AMP's
//     unscale check): list positions are independent, so the call runs as
//     calls over slices of every list, their list results concatenated;
//   - concatenations (cat, stack and their out= overloads): slices are
//     concatenated first, then the partial results, along the same
//     dimension (dtype promotion gives the same type either way).
//
// Other operators' list positions interact (index, block_diag, lstm, ...):
// they are not split, and their caller runs them another way.
#ifndef TORCH_NEURONX_CSRC_ATEN_INTERNAL_LONG_LISTS_H_
#define TORCH_NEURONX_CSRC_ATEN_INTERNAL_LONG_LISTS_H_

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <cstddef>

#include "csrc/aten/internal/OpInfo.h"

namespace torch_neuronx::internal {

// What a call takes of a LAUNCH, or what one LAUNCH holds.
struct LaunchSize {
  size_t addresses = 0;
  size_t scalar_bytes = 0;
};

// How many list elements a slice of a `length`-element call that takes
// `used` keeps so that it fits `limit`: at most half the list (so splitting
// always ends), at least one.
size_t SliceLength(size_t length, LaunchSize used, LaunchSize limit);

// Runs the call on top of `stack` (its arguments) as smaller calls, each
// through LaunchOnDevice (which splits again what still does not fit), and
// leaves its results in their place. Returns false, the stack untouched,
// when `op` is of neither kind above or its lists hold fewer than two
// elements. `used` is what the whole call takes.
bool LaunchInSlices(const c10::OperatorHandle& op, const OpInfo& info, torch::jit::Stack* stack,
                    LaunchSize used, LaunchSize limit);

}  // namespace torch_neuronx::internal

#endif  // TORCH_NEURONX_CSRC_ATEN_INTERNAL_LONG_LISTS_H_

// Operators whose output shape depends on tensor values. The count is read
// back first (a synchronization, as on CUDA), then the operator runs in the
// daemon with outputs of the right size.
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/count_nonzero.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/index.h>
#include <ATen/ops/index_select.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <vector>

#include "csrc/aten/GenericOp.h"

namespace torch_neuronx {
namespace {

at::Tensor Nonzero(const at::Tensor& self) {
  static const c10::OperatorHandle nonzero_out =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::nonzero", "out");
  const c10::DeviceGuard guard(self.device());
  const int64_t count = at::count_nonzero(self).item<int64_t>();
  at::Tensor out = at::empty({count, self.dim()}, self.options().dtype(at::kLong));
  torch::jit::Stack stack{self, out};
  LaunchOnDeviceWithoutMeta(nonzero_out, &stack);
  return out;
}

at::Tensor& NonzeroOut(const at::Tensor& self, at::Tensor& out) {
  // The CPU's messages.
  TORCH_CHECK(out.scalar_type() == at::kLong,
              "nonzero: Expected out tensor to have scalar type Long but got scalar type",
              out.scalar_type());
  TORCH_CHECK(out.device() == self.device(),
              "nonzero: Expected out tensor to be on the same device as self: ", self.device(),
              ", got ", out.device());
  const at::Tensor result = Nonzero(self);
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

bool IsMask(const at::Tensor& index) {
  return index.defined() &&
         (index.scalar_type() == at::kBool || index.scalar_type() == at::kByte);
}

// Boolean masks become the long indices of their true elements, one index
// tensor per masked dimension, after the check that each mask has the shape
// of the dimensions it covers (what ATen's expandTensors does, with its
// IndexError and words).
c10::List<std::optional<at::Tensor>> MasksToIndices(
    const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  c10::List<std::optional<at::Tensor>> expanded;
  for (const std::optional<at::Tensor>& index : indices) {
    if (!index.has_value() || !IsMask(*index)) {
      expanded.push_back(index);
      continue;
    }
    if (index->scalar_type() == at::kByte) {
      // The CPU's and CUDA's words (ATen's expandTensors), once per use.
      TORCH_WARN("indexing with dtype torch.uint8 is now deprecated,"
                 " please use a dtype torch.bool instead.");
    }
    for (int64_t j = 0; j < index->dim(); ++j) {
      const int64_t source = static_cast<int64_t>(expanded.size()) + j;
      TORCH_CHECK_INDEX(source < self.dim(), "Dimension out of range (expected to be in range of [",
                        -self.dim(), ", ", self.dim() - 1, "], but got ", source, ")");
      TORCH_CHECK_INDEX(index->size(j) == self.size(source), "The shape of the mask ",
                        index->sizes(), " at index ", j,
                        " does not match the shape of the indexed tensor ", self.sizes(),
                        " at index ", source);
    }
    const at::Tensor positions = Nonzero(*index);
    for (int64_t dim = 0; dim < index->dim(); ++dim) expanded.push_back(positions.select(1, dim));
  }
  return expanded;
}

// Index and mask tensors on the CPU index a neuron tensor, as they index a
// CUDA one: they are copied to its device first. Indices on another
// accelerator are left for the launch to refuse.
c10::List<std::optional<at::Tensor>> OnDeviceOf(
    const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  c10::List<std::optional<at::Tensor>> moved;
  moved.reserve(indices.size());
  for (const std::optional<at::Tensor>& index : indices) {
    if (index.has_value() && index->defined() && index->device().is_cpu()) {
      moved.push_back(index->to(self.device()));
    } else {
      moved.push_back(index);
    }
  }
  return moved;
}

// `shape` broadcast with `sizes`, or nullopt when they do not broadcast.
std::optional<std::vector<int64_t>> Broadcast(std::vector<int64_t> shape, at::IntArrayRef sizes) {
  if (shape.size() < sizes.size()) shape.insert(shape.begin(), sizes.size() - shape.size(), 1);
  const size_t skip = shape.size() - sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t& dim = shape[skip + i];
    if (dim == 1) {
      dim = sizes[i];
    } else if (sizes[i] != 1 && sizes[i] != dim) {
      return std::nullopt;
    }
  }
  return shape;
}

// The indices a launch takes: on self's device, masks as long indices;
// checked first as ATen checks them, with its IndexError and its words
// (the meta kernel raises others).
c10::List<std::optional<at::Tensor>> LaunchIndices(
    const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  for (const std::optional<at::Tensor>& index : indices) {
    if (!index.has_value() || !index->defined()) continue;
    const at::ScalarType dtype = index->scalar_type();
    TORCH_CHECK_INDEX(dtype == at::kLong || dtype == at::kInt || IsMask(*index),
                      "tensors used as indices must be long, int, byte or bool tensors");
  }
  c10::List<std::optional<at::Tensor>> moved = OnDeviceOf(self, indices);
  for (const std::optional<at::Tensor>& index : moved) {
    if (index.has_value() && IsMask(*index)) {
      moved = MasksToIndices(self, moved);
      break;
    }
  }
  std::optional<std::vector<int64_t>> shape = std::vector<int64_t>{};
  std::string shapes;
  for (const std::optional<at::Tensor>& index : moved) {
    if (!index.has_value() || !index->defined()) continue;
    if (shape) shape = Broadcast(*std::move(shape), index->sizes());
    shapes += (shapes.empty() ? "" : ", ") + c10::str(index->sizes());
  }
  TORCH_CHECK_INDEX(shape.has_value(),
                    "shape mismatch: indexing tensors could not be broadcast together with "
                    "shapes ", shapes);
  return moved;
}

// The CPU's first check of index_put_: the values broadcast to the shape
// `self[indices]` has (found on meta tensors; masks are long indices here).
void CheckValuesFitIndexingResult(const at::Tensor& self,
                                  const c10::List<std::optional<at::Tensor>>& indices,
                                  const at::Tensor& values) {
  c10::List<std::optional<at::Tensor>> on_meta;
  for (const std::optional<at::Tensor>& index : indices) {
    if (index.has_value() && index->defined()) {
      on_meta.push_back(at::empty(index->sizes(), index->options().device(at::kMeta)));
    } else {
      on_meta.push_back(index);
    }
  }
  const at::Tensor result =
      at::index(at::empty(self.sizes(), self.options().device(at::kMeta)), on_meta);
  TORCH_CHECK(at::is_expandable_to(values.sizes(), result.sizes()),
              "shape mismatch: value tensor of shape ", values.sizes(),
              " cannot be broadcast to indexing result of shape ", result.sizes());
}

at::Tensor Index(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  static const c10::OperatorHandle index =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::index", "Tensor");
  torch::jit::Stack stack{self, LaunchIndices(self, indices)};
  LaunchOnDevice(index, &stack);
  return stack[0].toTensor();
}

at::Tensor& IndexPut(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                     const at::Tensor& values, bool accumulate, bool unsafe) {
  static const c10::OperatorHandle index_put =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::_index_put_impl_", "");
  c10::List<std::optional<at::Tensor>> launch_indices = LaunchIndices(self, indices);
  // The CPU's checks, in its order, made at the call rather than when the
  // launch fails (the launch's meta kernel checks no dtype).
  if (values.scalar_type() != self.scalar_type()) {
    CheckValuesFitIndexingResult(self, launch_indices, values);
    TORCH_CHECK(false, "Index put requires the source and destination dtypes match, got ",
                self.scalar_type(), " for the destination and ", values.scalar_type(),
                " for the source.");
  }
  torch::jit::Stack stack{self, std::move(launch_indices), values, accumulate, unsafe};
  LaunchOnDevice(index_put, &stack);
  return self;
}

at::Tensor MaskedSelect(const at::Tensor& self, const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::ScalarType::Bool,
              "masked_select: expected BoolTensor for mask");
  auto [values, flags] = at::expand_outplace(self, mask);
  const at::Tensor positions = Nonzero(flags->reshape({-1})).squeeze(1);
  return at::index_select(values->reshape({-1}), 0, positions);
}

// torch.unique: sort on the device, mark where a new value starts, and read
// back only the number of distinct values. The values come out sorted
// (allowed for sorted=False too).
std::tuple<at::Tensor, at::Tensor, at::Tensor> Unique(const at::Tensor& self, bool /*sorted*/,
                                                      bool return_inverse, bool return_counts) {
  const c10::DeviceGuard guard(self.device());
  const at::TensorOptions long_options = self.options().dtype(at::kLong);
  const int64_t n = self.numel();
  if (n == 0) {
    return {at::empty({0}, self.options()),
            return_inverse ? at::empty(self.sizes(), long_options) : at::empty({0}, long_options),
            at::empty({0}, long_options)};
  }
  auto [sorted_values, order] = self.flatten().sort(/*stable=*/true, /*dim=*/0, false);
  at::Tensor starts = at::full({n}, true, self.options().dtype(at::kBool));
  if (n > 1) {
    starts.slice(0, 1).copy_(sorted_values.slice(0, 1).ne(sorted_values.slice(0, 0, n - 1)));
  }
  const at::Tensor start_positions = Nonzero(starts).squeeze(1);
  const at::Tensor values = sorted_values.index_select(0, start_positions);
  at::Tensor inverse = at::empty({0}, long_options);
  if (return_inverse) {
    const at::Tensor group = starts.to(at::kLong).cumsum(0).sub_(1);
    inverse = at::empty({n}, long_options).scatter_(0, order, group).view(self.sizes());
  }
  at::Tensor counts = at::empty({0}, long_options);
  if (return_counts) {
    const at::Tensor ends = at::cat({start_positions.slice(0, 1),
                                     at::full({1}, n, long_options)});
    counts = ends.sub(start_positions);
  }
  return {values, inverse, counts};
}

// The older torch.unique entry (without counts), which some decompositions
// still call (index_fill's backward).
std::tuple<at::Tensor, at::Tensor> UniqueWithoutCounts(const at::Tensor& self, bool sorted,
                                                       bool return_inverse) {
  auto [values, inverse, counts] = Unique(self, sorted, return_inverse, false);
  return {values, inverse};
}

// Where each run of equal rows of `rows` (n x m) starts, and the run of
// every row: what unique_consecutive and unique(dim=) have in common once
// the rows are in order. `counts` is filled only when asked for.
struct Runs {
  at::Tensor starts;     // long positions of each run's first row
  at::Tensor run_of_row; // long, n
  at::Tensor counts;     // long, one per run
};

Runs FindRuns(const at::Tensor& rows, bool with_run_of_row, bool with_counts) {
  const int64_t n = rows.size(0);
  const at::TensorOptions long_options = rows.options().dtype(at::kLong);
  at::Tensor is_start = at::full({n}, true, rows.options().dtype(at::kBool));
  if (n > 1) {
    at::Tensor differs = rows.slice(0, 1).ne(rows.slice(0, 0, n - 1));
    if (differs.dim() > 1) differs = differs.any(1);
    is_start.slice(0, 1).copy_(differs);
  }
  Runs runs;
  runs.starts = Nonzero(is_start).squeeze(1);
  runs.run_of_row = with_run_of_row ? is_start.to(at::kLong).cumsum(0).sub_(1)
                                    : at::empty({0}, long_options);
  runs.counts = with_counts
                    ? at::cat({runs.starts.slice(0, 1), at::full({1}, n, long_options)})
                          .sub_(runs.starts)
                    : at::empty({0}, long_options);
  return runs;
}

// The slices of `self` along `dim` as the rows of a matrix.
at::Tensor SlicesAsRows(const at::Tensor& self, int64_t dim) {
  return self.movedim(dim, 0).reshape({self.size(dim), -1});
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> UniqueConsecutive(const at::Tensor& self,
                                                                 bool return_inverse,
                                                                 bool return_counts,
                                                                 std::optional<int64_t> dim) {
  const c10::DeviceGuard guard(self.device());
  const at::TensorOptions long_options = self.options().dtype(at::kLong);
  if (!dim.has_value() || self.dim() == 0) {
    if (self.numel() == 0) {
      return {at::empty({0}, self.options()),
              return_inverse ? at::empty(self.sizes(), long_options) : at::empty({0}, long_options),
              at::empty({0}, long_options)};
    }
    const at::Tensor flat = self.flatten();
    const Runs runs = FindRuns(flat, return_inverse, return_counts);
    return {flat.index_select(0, runs.starts),
            return_inverse ? runs.run_of_row.view(self.sizes()) : runs.run_of_row, runs.counts};
  }
  const int64_t d = c10::maybe_wrap_dim(*dim, self.dim());
  if (self.size(d) == 0) {
    return {self.clone(), at::empty({0}, long_options), at::empty({0}, long_options)};
  }
  const Runs runs = FindRuns(SlicesAsRows(self, d), return_inverse, return_counts);
  return {self.index_select(d, runs.starts), runs.run_of_row, runs.counts};
}

// torch.unique(dim=): the slices are ordered lexicographically by stable
// sorts on one column after another, from the last (a radix sort: three
// launches per column, all on the device), then their runs are found.
std::tuple<at::Tensor, at::Tensor, at::Tensor> UniqueDim(const at::Tensor& self, int64_t dim,
                                                         bool /*sorted*/, bool return_inverse,
                                                         bool return_counts) {
  const c10::DeviceGuard guard(self.device());
  const at::TensorOptions long_options = self.options().dtype(at::kLong);
  const int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(self.numel() > 0 || self.size(d) == 0,
                    "Number of zero sized dimensions is more than one, so unique cannot be "
                    "applied");
  const int64_t n = self.size(d);
  if (n == 0) {
    return {self.clone(), at::empty({0}, long_options), at::empty({0}, long_options)};
  }
  const at::Tensor rows = SlicesAsRows(self, d);
  at::Tensor order = at::arange(n, long_options);
  for (int64_t column = rows.size(1) - 1; column >= 0; --column) {
    const at::Tensor key = rows.select(1, column).index_select(0, order);
    order = order.index_select(0, std::get<1>(key.sort(/*stable=*/true, 0, false)));
  }
  const Runs runs = FindRuns(rows.index_select(0, order), return_inverse, return_counts);
  at::Tensor inverse = runs.run_of_row;
  if (return_inverse) inverse = at::empty({n}, long_options).scatter_(0, order, runs.run_of_row);
  return {self.index_select(d, order.index_select(0, runs.starts)), inverse, runs.counts};
}

// repeat_interleave(repeats) without output_size: the output's length is
// the sum of the repeats, read back first.
at::Tensor RepeatInterleave(const at::Tensor& repeats, std::optional<c10::SymInt> output_size) {
  static const c10::OperatorHandle repeat_interleave =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::repeat_interleave", "Tensor");
  const c10::DeviceGuard guard(repeats.device());
  if (!output_size.has_value()) {
    TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
    output_size = repeats.numel() == 0 ? 0 : repeats.sum().item<int64_t>();
  }
  torch::jit::Stack stack{repeats, *output_size};
  LaunchOnDevice(repeat_interleave, &stack);
  return stack[0].toTensor();
}

// torch.equal: compared on the device; one bool read back.
bool Equal(const at::Tensor& self, const at::Tensor& other) {
  if (!self.sizes().equals(other.sizes()) || self.scalar_type() != other.scalar_type()) {
    return false;
  }
  const c10::DeviceGuard guard(self.device());
  return self.eq(other).all().item<bool>();
}

// torch.bincount: the length is max(input) + 1 (at least minlength), read
// back; the counting is a scatter-add on the device.
at::Tensor Bincount(const at::Tensor& self, const std::optional<at::Tensor>& weights,
                    int64_t minlength) {
  TORCH_CHECK_VALUE(self.dim() == 1, "bincount only supports 1-d non-negative integral inputs");
  TORCH_CHECK_VALUE(minlength >= 0, "minlength should be >= 0");
  const c10::DeviceGuard guard(self.device());
  const bool weighted = weights.has_value() && weights->defined();
  const at::ScalarType result_type =
      weighted ? (weights->scalar_type() == at::kFloat ? at::kFloat : at::kDouble) : at::kLong;
  if (self.numel() == 0) return at::zeros({minlength}, self.options().dtype(result_type));
  TORCH_CHECK_VALUE(self.min().item<int64_t>() >= 0, "bincount only supports 1-d non-negative integral inputs");
  const int64_t length = std::max(self.max().item<int64_t>() + 1, minlength);
  at::Tensor counts = at::zeros({length}, self.options().dtype(result_type));
  const at::Tensor index = self.to(at::kLong);
  return counts.index_add_(0, index, weighted ? weights->to(counts.scalar_type())
                                              : at::ones_like(index, counts.options()));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("equal", Equal);
  m.impl("bincount", Bincount);
  m.impl("_unique2", Unique);
  m.impl("_unique", UniqueWithoutCounts);
  m.impl("nonzero", Nonzero);
  m.impl("nonzero.out", NonzeroOut);
  m.impl("index.Tensor", Index);
  m.impl("_index_put_impl_", IndexPut);
  m.impl("masked_select", MaskedSelect);
  m.impl("unique_consecutive", UniqueConsecutive);
  m.impl("unique_dim", UniqueDim);
  m.impl("repeat_interleave.Tensor", RepeatInterleave);
}

}  // namespace torch_neuronx

// Operators with no meta kernel whose output shapes follow from their
// arguments alone: the outputs are allocated here and the operator's out=
// form runs in the daemon without meta inference. Without these they ran
// on the CPU (every call a copy to the host and back); CUDA runs them
// natively.
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "csrc/aten/GenericOp.h"

namespace torch_neuronx {
namespace {

c10::OperatorHandle Op(const char* name, const char* overload) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
}

// cummax and cummin (CompositeExplicitAutograd) size their outputs and call
// these helpers, which only write them.
void CummaxHelper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  static const c10::OperatorHandle helper = Op("aten::_cummax_helper", "");
  torch::jit::Stack stack{self, values, indices, dim};
  LaunchOnDeviceWithoutMeta(helper, &stack);
}

void CumminHelper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  static const c10::OperatorHandle helper = Op("aten::_cummin_helper", "");
  torch::jit::Stack stack{self, values, indices, dim};
  LaunchOnDeviceWithoutMeta(helper, &stack);
}

at::Tensor& LogcumsumexpOut(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  static const c10::OperatorHandle logcumsumexp_out = Op("aten::_logcumsumexp", "out");
  const c10::DeviceGuard guard(self.device());
  if (!out.sizes().equals(self.sizes())) out.resize_(self.sizes());
  torch::jit::Stack stack{self, dim, out};
  LaunchOnDeviceWithoutMeta(logcumsumexp_out, &stack);
  return out;
}

at::Tensor Logcumsumexp(const at::Tensor& self, int64_t dim) {
  at::Tensor out = at::empty(self.sizes(), self.options());
  return LogcumsumexpOut(self, dim, out);
}

// The Householder form of a QR factorization: `a` as the input, `tau` one
// scalar per reflector.
std::tuple<at::Tensor&, at::Tensor&> GeqrfOut(const at::Tensor& self, at::Tensor& a,
                                              at::Tensor& tau) {
  static const c10::OperatorHandle geqrf_out = Op("aten::geqrf", "a");
  TORCH_CHECK(self.dim() >= 2, "torch.geqrf: input must have at least 2 dimensions.");
  const c10::DeviceGuard guard(self.device());
  std::vector<int64_t> tau_sizes(self.sizes().begin(), self.sizes().end() - 2);
  tau_sizes.push_back(std::min(self.size(-2), self.size(-1)));
  if (!a.sizes().equals(self.sizes())) a.resize_(self.sizes());
  if (!tau.sizes().equals(tau_sizes)) tau.resize_(tau_sizes);
  torch::jit::Stack stack{self, a, tau};
  LaunchOnDeviceWithoutMeta(geqrf_out, &stack);
  return {a, tau};
}

std::tuple<at::Tensor, at::Tensor> Geqrf(const at::Tensor& self) {
  at::Tensor a = at::empty({0}, self.options());
  at::Tensor tau = at::empty({0}, self.options());
  GeqrfOut(self, a, tau);
  return {a, tau};
}

// torch.histogram: `bins` counts and `bins + 1` edges, in the input's dtype.
std::tuple<at::Tensor, at::Tensor> HistogramBinCount(const at::Tensor& self, int64_t bins,
                                                     std::optional<at::ArrayRef<double>> range,
                                                     const std::optional<at::Tensor>& weight,
                                                     bool density) {
  static const c10::OperatorHandle histogram_out = Op("aten::histogram", "bin_ct_out");
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  const c10::DeviceGuard guard(self.device());
  at::Tensor hist = at::empty({bins}, self.options());
  at::Tensor edges = at::empty({bins + 1}, self.options());
  std::optional<std::vector<double>> range_values;
  if (range.has_value()) range_values = range->vec();
  torch::jit::Stack stack{self, bins, range_values, weight, density, hist, edges};
  LaunchOnDeviceWithoutMeta(histogram_out, &stack);
  return {hist, edges};
}

std::tuple<at::Tensor, at::Tensor> HistogramBinEdges(const at::Tensor& self,
                                                     const at::Tensor& bins,
                                                     const std::optional<at::Tensor>& weight,
                                                     bool density) {
  static const c10::OperatorHandle histogram_out = Op("aten::histogram", "bins_tensor_out");
  TORCH_CHECK(bins.dim() == 1, "torch.histogram(): bins tensor should have one dimension, but got ",
              bins.dim(), " dimensions in the bin tensor");
  TORCH_CHECK(bins.numel() > 0,
              "torch.histogram(): bins tensor should have at least 1 element, but got ",
              bins.numel(), " elements in the bin tensor");
  const c10::DeviceGuard guard(self.device());
  at::Tensor hist = at::empty({bins.numel() - 1}, self.options());
  at::Tensor edges = at::empty({bins.numel()}, self.options());
  torch::jit::Stack stack{self, bins, weight, density, hist, edges};
  LaunchOnDeviceWithoutMeta(histogram_out, &stack);
  return {hist, edges};
}

// torch.histogramdd's three parts: the edges of each dimension, then the
// counts from bin counts or from edge tensors.
std::vector<at::Tensor> HistogramddBinEdges(const at::Tensor& self, at::IntArrayRef bins,
                                            std::optional<at::ArrayRef<double>> range,
                                            const std::optional<at::Tensor>& weight,
                                            bool density) {
  static const c10::OperatorHandle edges_out = Op("aten::_histogramdd_bin_edges", "out");
  const c10::DeviceGuard guard(self.device());
  std::vector<at::Tensor> edges;
  for (const int64_t count : bins) {
    TORCH_CHECK(count > 0, "torch.histogramdd(): bins must be > 0, but got ", count);
    edges.push_back(at::empty({count + 1}, self.options()));
  }
  std::optional<std::vector<double>> range_values;
  if (range.has_value()) range_values = range->vec();
  torch::jit::Stack stack{self, bins.vec(), range_values, weight, density, edges};
  LaunchOnDeviceWithoutMeta(edges_out, &stack);
  return edges;
}

at::Tensor HistogramddFromBinCounts(const at::Tensor& self, at::IntArrayRef bins,
                                    std::optional<at::ArrayRef<double>> range,
                                    const std::optional<at::Tensor>& weight, bool density) {
  static const c10::OperatorHandle counts_out = Op("aten::_histogramdd_from_bin_cts", "out");
  const c10::DeviceGuard guard(self.device());
  at::Tensor hist = at::empty(bins, self.options());
  std::optional<std::vector<double>> range_values;
  if (range.has_value()) range_values = range->vec();
  torch::jit::Stack stack{self, bins.vec(), range_values, weight, density, hist};
  LaunchOnDeviceWithoutMeta(counts_out, &stack);
  return hist;
}

at::Tensor HistogramddFromBinTensors(const at::Tensor& self, at::TensorList bins,
                                     const std::optional<at::Tensor>& weight, bool density) {
  static const c10::OperatorHandle counts_out = Op("aten::_histogramdd_from_bin_tensors", "out");
  const c10::DeviceGuard guard(self.device());
  std::vector<int64_t> sizes;
  for (const at::Tensor& edges : bins) sizes.push_back(std::max<int64_t>(edges.numel() - 1, 0));
  at::Tensor hist = at::empty(sizes, self.options());
  torch::jit::Stack stack{self, bins.vec(), weight, density, hist};
  LaunchOnDeviceWithoutMeta(counts_out, &stack);
  return hist;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_cummax_helper", CummaxHelper);
  m.impl("_cummin_helper", CumminHelper);
  m.impl("_logcumsumexp", Logcumsumexp);
  m.impl("_logcumsumexp.out", LogcumsumexpOut);
  m.impl("geqrf", Geqrf);
  m.impl("geqrf.a", GeqrfOut);
  m.impl("histogram.bin_ct", HistogramBinCount);
  m.impl("histogram.bins_tensor", HistogramBinEdges);
  m.impl("_histogramdd_bin_edges", HistogramddBinEdges);
  m.impl("_histogramdd_from_bin_cts", HistogramddFromBinCounts);
  m.impl("_histogramdd_from_bin_tensors", HistogramddFromBinTensors);
}

}  // namespace torch_neuronx

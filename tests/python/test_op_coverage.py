"""Operators that once fell back to the CPU or failed on `neuron` where CUDA
runs them: each runs on the device, matches the CPU, and leaves no entry in
torch_neuronx.get_fallback_ops()."""

import pytest
import torch
import torch.nn.functional as F

import torch_neuronx


def on(device, value):
    return value.to(device) if isinstance(value, torch.Tensor) else value


REPEATS = torch.tensor([1, 2, 0])
ROWS = torch.tensor([[3, 1], [1, 2], [3, 1], [1, 0], [1, 2]])
RUNS = torch.tensor([1, 1, 2, 2, 3, 1, 1])

# name: (function of (input, device), operators that must not fall back)
CASES = {
    "repeat_interleave_without_output_size": (
        lambda x, d: torch.repeat_interleave(x[:, 0], on(d, REPEATS), dim=0),
        {"aten::repeat_interleave.Tensor"}),
    "repeat_interleave_of_repeats": (
        lambda x, d: torch.repeat_interleave(on(d, REPEATS)), {"aten::repeat_interleave.Tensor"}),
    "cummax": (lambda x, d: torch.cummax(x, 1), {"aten::_cummax_helper"}),
    "cummin": (lambda x, d: torch.cummin(x, 0), {"aten::_cummin_helper"}),
    "logcumsumexp": (lambda x, d: torch.logcumsumexp(x, 1), {"aten::_logcumsumexp"}),
    "geqrf": (lambda x, d: torch.geqrf(x), {"aten::geqrf"}),
    "geqrf_batched": (lambda x, d: torch.geqrf(torch.stack([x, 2 * x])), {"aten::geqrf"}),
    "histogram": (lambda x, d: torch.histogram(x, 4), {"aten::histogram.bin_ct_out"}),
    "histogram_weighted_density": (
        lambda x, d: torch.histogram(x, 4, range=(-1.0, 1.0), weight=x.abs(), density=True),
        {"aten::histogram.bin_ct_out"}),
    "histogram_edges": (
        lambda x, d: torch.histogram(x, on(d, torch.tensor([-2.0, 0.0, 0.5, 2.0]))),
        {"aten::histogram.bins_tensor_out"}),
    "histogramdd": (lambda x, d: torch.histogramdd(x[:, :2], bins=[3, 4]),
                    {"aten::_histogramdd_bin_edges.out", "aten::_histogramdd_from_bin_cts.out"}),
    "histogramdd_edges": (
        lambda x, d: torch.histogramdd(x[:, :2], bins=[on(d, torch.tensor([-2.0, 0.0, 2.0]))] * 2),
        {"aten::_histogramdd_from_bin_tensors.out"}),
    "unique_consecutive": (
        lambda x, d: torch.unique_consecutive(on(d, RUNS), return_inverse=True,
                                              return_counts=True),
        {"aten::unique_consecutive"}),
    "unique_consecutive_dim": (
        lambda x, d: torch.unique_consecutive(on(d, ROWS), return_inverse=True,
                                              return_counts=True, dim=0),
        {"aten::unique_consecutive"}),
    "unique_without_counts": (
        lambda x, d: torch.ops.aten._unique(on(d, RUNS), True, True), {"aten::_unique"}),
    "unique_dim0": (lambda x, d: torch.unique(on(d, ROWS), dim=0, return_inverse=True,
                                              return_counts=True), {"aten::unique_dim"}),
    "unique_dim1": (lambda x, d: torch.unique(on(d, ROWS.T), dim=1, return_inverse=True,
                                              return_counts=True), {"aten::unique_dim"}),
}


def flatten(result):
    if isinstance(result, torch.Tensor):
        return [result]
    return [tensor for part in result for tensor in flatten(part)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_runs_on_the_device_as_on_the_cpu(name):
    function, operators = CASES[name]
    torch.manual_seed(0)
    x = torch.randn(3, 5)
    expected = function(x, "cpu")
    actual = function(x.to("neuron"), "neuron")
    expected, actual = flatten(expected), flatten(actual)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.device.type == "neuron"
        assert a.dtype == e.dtype and a.shape == e.shape
        torch.testing.assert_close(a.cpu(), e, rtol=1e-5, atol=1e-5)
    assert not operators & set(torch_neuronx.get_fallback_ops())


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8])
def test_histc_counts_integer_tensors_as_cuda_does(dtype):
    # The MoE routers of Mixtral and Qwen2-MoE count tokens per expert so;
    # the CPU kernel refuses integers.
    values = torch.tensor([0, 1, 1, 3, 3, 3, 7], dtype=dtype)
    counts = torch.histc(values.to("neuron"), bins=4, min=0, max=3)
    assert counts.dtype == dtype
    expected = torch.histc(values.float(), bins=4, min=0, max=3).to(dtype)
    assert counts.cpu().tolist() == expected.tolist()


def test_attention_with_a_learned_mask_takes_the_math_path():
    # T5's position bias is a mask that needs a gradient: the CPU's flash
    # kernel has none for it, so the CPU takes the math path, and so must we.
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 6, 8, requires_grad=True) for _ in range(3))
    bias = torch.randn(1, 4, 6, 6, requires_grad=True)
    leaves = [t.detach().to("neuron").requires_grad_() for t in (q, k, v, bias)]
    F.scaled_dot_product_attention(q, k, v, attn_mask=bias).square().sum().backward()
    F.scaled_dot_product_attention(*leaves[:3], attn_mask=leaves[3]).square().sum().backward()
    for expected, actual in zip((q, k, v, bias), leaves):
        torch.testing.assert_close(actual.grad.cpu(), expected.grad, rtol=1e-4, atol=1e-4)


def test_hash_tensor_returns_uint64_from_the_device():
    # uint64 results were refused at load ("dtype 29 is not supported").
    x = torch.randn(4, 6)
    actual = torch.hash_tensor(x.to("neuron"), [1])
    assert actual.device.type == "neuron" and actual.dtype == torch.uint64
    assert torch.equal(actual.cpu(), torch.hash_tensor(x, [1]))


@pytest.mark.parametrize("with_affine", [False, True])
def test_layer_norm_in_bfloat16_keeps_its_statistics_in_bfloat16(with_affine):
    x = torch.randn(2, 3, 8, dtype=torch.bfloat16)
    weight = torch.randn(8, dtype=torch.bfloat16) if with_affine else None
    expected = torch.ops.aten.native_layer_norm(x, [8], weight, weight, 1e-5)
    actual = torch.ops.aten.native_layer_norm(x.to("neuron"), [8], on("neuron", weight),
                                              on("neuron", weight), 1e-5)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype == torch.bfloat16
        torch.testing.assert_close(a.cpu(), e)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_trains_as_on_the_cpu(mode, include_last_offset):
    # offset2bag (which the sum path of the CPU kernel leaves unwritten) and
    # bag_size (one fewer with include_last_offset) feed the backward.
    torch.manual_seed(0)
    weight = torch.randn(10, 3, requires_grad=True)
    indices, offsets = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 3, 3, 6, 8])
    weights = torch.rand(8, requires_grad=True) if mode == "sum" else None
    n_weight = weight.detach().to("neuron").requires_grad_()
    n_weights = weights.detach().to("neuron").requires_grad_() if weights is not None else None
    expected = F.embedding_bag(indices, weight, offsets, mode=mode, per_sample_weights=weights,
                               include_last_offset=include_last_offset)
    actual = F.embedding_bag(indices.to("neuron"), n_weight, offsets.to("neuron"), mode=mode,
                             per_sample_weights=n_weights, include_last_offset=include_last_offset)
    torch.testing.assert_close(actual.cpu(), expected)
    expected.square().sum().backward()
    actual.square().sum().backward()
    torch.testing.assert_close(n_weight.grad.cpu(), weight.grad)
    if weights is not None:
        torch.testing.assert_close(n_weights.grad.cpu(), weights.grad)

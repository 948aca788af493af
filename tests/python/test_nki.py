"""NKI kernels on neuron: the acceptance kernels of examples/nki against
PyTorch on the CPU (eager, torch.compile and nki.simulate), the hardware
rules the tracer enforces, and what the daemon does with kernels it did not
trace itself."""

import os
import sys
import tempfile

import numpy as np
import pytest
import torch
import torch_neuronx

import nki
import nki.isa as nisa
import nki.language as nl
from nki import NkiValidationError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "nki"))

import matmul  # noqa: E402
import rmsnorm  # noqa: E402
import sin_cos  # noqa: E402
import softmax  # noqa: E402
import tensor_add  # noqa: E402

HERE = os.path.basename(__file__)


def line_of(function, text):
    """file:line of the first line of `function` holding `text`."""
    import inspect
    lines, first = inspect.getsourcelines(function)
    for offset, line in enumerate(lines):
        if text in line:
            return f"{HERE}:{first + offset}"
    raise AssertionError(f"{text!r} not in {function.__name__}")


# -- the announcement ---------------------------------------------------------

def test_the_announcements_sin_runs_on_the_device_and_backward_runs_the_cos_kernel():
    torch.manual_seed(0)
    x = torch.randn(128, 1, device="neuron", requires_grad=True)
    y = sin_cos.pt_nki_sin(x)
    assert y.device.type == "neuron"
    y.sum().backward()
    cpu = x.detach().cpu()
    torch.testing.assert_close(y.detach().cpu(), cpu.sin(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(x.grad.cpu(), cpu.cos(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("shape", [(128, 512), (256, 1024)])
def test_tiled_sin_and_its_gradient_match_the_cpu(shape):
    x = torch.randn(*shape, device="neuron", requires_grad=True)
    y = sin_cos.pt_nki_sin_tiled(x)
    (y * 2).sum().backward()
    cpu = x.detach().cpu()
    torch.testing.assert_close(y.detach().cpu(), cpu.sin(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(x.grad.cpu(), 2 * cpu.cos(), atol=1e-5, rtol=1e-5)


def test_sin_under_torch_compile_forward_and_backward():
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: sin_cos.pt_nki_sin_tiled(t).sum(), backend="neuron")
    x = torch.randn(256, 1024, device="neuron", requires_grad=True)
    compiled(x).backward()
    cpu = x.detach().cpu()
    torch.testing.assert_close(x.grad.cpu(), cpu.cos(), atol=1e-5, rtol=1e-5)


@torch_neuronx.nki_op("nki_test::add", mutates_args={})
def nki_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return tensor_add.tensor_add_kernel(a, b)


nki_add.register_autograd(lambda ctx, grad: (grad, grad))


def test_under_torch_compile_kernels_are_nodes_of_the_graph_executables():
    torch._dynamo.reset()
    before = len(torch_neuronx.compiled_graphs())

    def step(x, y):
        return (sin_cos.pt_nki_sin_tiled(nki_add(x * 2, y)) + 1).sum()

    compiled = torch.compile(step, backend="neuron")
    x = torch.randn(256, 1024, device="neuron", requires_grad=True)
    y = torch.randn(256, 1024, device="neuron")
    loss = compiled(x, y)
    loss.backward()
    cpu_x = x.detach().cpu().requires_grad_()
    expected = ((cpu_x * 2 + y.cpu()).sin() + 1).sum()
    expected.backward()
    torch.testing.assert_close(loss.detach().cpu(), expected.detach(), rtol=1e-4, atol=1e-2)
    torch.testing.assert_close(x.grad.cpu(), cpu_x.grad, atol=1e-5, rtol=1e-5)
    graphs = torch_neuronx.compiled_graphs()[before:]
    assert [g["name"].split("_")[0] for g in graphs] == ["forward", "backward"]
    for graph in graphs:
        # Every node, the kernels' included, runs in the graph executable.
        assert graph["client_nodes"] == [], graph


def test_a_compiled_graph_that_runs_kernels_stays_interpreted():
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: sin_cos.pt_nki_sin_tiled(t) * 3, backend="neuron")
    x = torch.randn(128, 512, device="neuron")
    for _ in range(3):
        out = compiled(x)
    torch.testing.assert_close(out.cpu(), x.cpu().sin() * 3, atol=1e-5, rtol=1e-5)
    states = [state for tier, state in torch_neuronx._C._graph_tiers().values()
              if "NKI" in state and tier == 0]
    assert states == ["interpreted (NKI kernels are not compiled)"] * len(states) and states


def test_a_kernel_called_directly_in_a_compiled_function_breaks_the_graph_and_runs():
    torch._dynamo.reset()

    def function(x):
        out = torch.empty_like(x)
        sin_cos.elementwise_tiled_kernel(x * 2, out, nl.sin)
        return out + 1

    x = torch.randn(128, 512, device="neuron")
    out = torch.compile(function, backend="neuron")(x)
    torch.testing.assert_close(out.cpu(), (x.cpu() * 2).sin() + 1, atol=1e-5, rtol=1e-5)


def test_a_bfloat16_sin_rounds_like_the_cpu():
    x = torch.randn(128, 512, dtype=torch.bfloat16, device="neuron")
    out = torch.empty_like(x)
    sin_cos.elementwise_tiled_kernel(x, out, nl.sin)
    expected = x.cpu().float().sin().to(torch.bfloat16)
    torch.testing.assert_close(out.cpu(), expected, atol=0, rtol=0)


# -- tensor add -----------------------------------------------------------------

def test_tiled_add_in_float16_is_exact():
    a = torch.randn(256, 1024, dtype=torch.float16, device="neuron")
    b = torch.randn(256, 1024, dtype=torch.float16, device="neuron")
    assert torch.equal(tensor_add.tensor_add_kernel(a, b).cpu(), a.cpu() + b.cpu())


def test_a_launch_grid_runs_one_instance_per_tile():
    a = torch.randn(256, 1024, device="neuron")
    b = torch.randn(256, 1024, device="neuron")
    out = tensor_add.tensor_add_grid_kernel[2, 2](a, b)
    assert torch.equal(out.cpu(), a.cpu() + b.cpu())


def test_a_kernel_is_traced_once_per_signature():
    traced = nki.trace(tensor_add.tensor_add_kernel, torch.empty(256, 1024),
                       torch.empty(256, 1024))
    again = nki.trace(tensor_add.tensor_add_kernel, torch.empty(256, 1024),
                      torch.empty(256, 1024))
    assert traced is again
    # 2 x 2 tiles of: two loads, an add, a store.
    assert traced.instruction_count == 16
    other = nki.trace(tensor_add.tensor_add_kernel, torch.empty(128, 512),
                      torch.empty(128, 512))
    assert other is not traced and other.instruction_count == 4


# -- matmul -------------------------------------------------------------------

def test_a_single_matmul_tile():
    @nki.jit
    def kernel(lhsT, rhs):
        out = nl.ndarray((64, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        product = nl.ndarray((64, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(product, nl.load(lhsT), nl.load(rhs))
        nl.store(out, value=product)
        return out

    lhsT = torch.randn(128, 64, device="neuron")
    rhs = torch.randn(128, 512, device="neuron")
    torch.testing.assert_close(kernel(lhsT, rhs).cpu(), lhsT.cpu().T @ rhs.cpu(),
                               atol=1e-4, rtol=1e-4)


def test_tiled_bfloat16_matmul_accumulates_in_psum():
    a = torch.randn(1024, 512, dtype=torch.bfloat16, device="neuron")
    b = torch.randn(512, 1024, dtype=torch.bfloat16, device="neuron")
    out = matmul.matmul_kernel(a.T.contiguous(), b).cpu()
    expected = (a.cpu().float() @ b.cpu().float()).to(torch.bfloat16)
    torch.testing.assert_close(out, expected, atol=0.05, rtol=2e-2)


def test_nl_matmul_transposes_on_the_tensor_engine():
    @nki.jit
    def kernel(x, y):
        out = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.matmul(nl.load(x), nl.load(y)))
        return out

    x = torch.randn(64, 128, device="neuron")
    y = torch.randn(128, 256, device="neuron")
    torch.testing.assert_close(kernel(x, y).cpu(), x.cpu() @ y.cpu(), atol=1e-4, rtol=1e-4)


# -- RMSNorm and softmax --------------------------------------------------------

def test_rmsnorm_with_a_partial_last_tile():
    a = torch.randn(250, 512, device="neuron")
    g = torch.randn(512, device="neuron")
    out = rmsnorm.rmsnorm_kernel(a, g).cpu()
    a, g = a.cpu(), g.cpu()
    expected = a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True)) * g
    torch.testing.assert_close(out, expected, atol=1e-4, rtol=1e-2)


def test_bfloat16_row_softmax():
    x = torch.randn(512, 2048, dtype=torch.bfloat16, device="neuron")
    out = softmax.softmax_kernel(x).cpu()
    expected = torch.softmax(x.cpu().float(), dim=-1).to(torch.bfloat16)
    torch.testing.assert_close(out, expected, atol=1e-3, rtol=1e-2)


def test_language_functions_lower_to_the_right_instructions():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        tile = nl.load(x)
        shifted = nl.exp(nl.subtract(tile, 1.0)) * 2.0 + tile
        nl.store(out, value=nl.mean(nl.softmax(shifted, axis=1) + nl.maximum(tile, 0.5), axis=1))
        return out

    x = torch.randn(128, 64, device="neuron")
    cpu = x.cpu()
    shifted = torch.exp(cpu - 1.0) * 2.0 + cpu
    expected = (torch.softmax(shifted, dim=1) + torch.clamp(cpu, min=0.5)).mean(1, keepdim=True)
    torch.testing.assert_close(kernel(x).cpu(), expected, atol=1e-5, rtol=1e-4)


def test_iota_and_transpose():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        positions = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.iota(positions, [[1, 8]], offset=3, channel_multiplier=8)
        nl.store(out, value=nl.transpose(nl.add(positions, nl.load(x))))
        return out

    x = torch.randn(16, 8, device="neuron")
    expected = (torch.arange(128, dtype=torch.float32).reshape(16, 8) + 3 + x.cpu()).T
    torch.testing.assert_close(kernel(x).cpu(), expected)


# -- nki.simulate -------------------------------------------------------------

def test_simulate_runs_the_same_interpreter_in_process_on_numpy_and_cpu_tensors():
    a = np.random.rand(256, 1024).astype(np.float32)
    b = np.random.rand(256, 1024).astype(np.float32)
    out = nki.simulate(tensor_add.tensor_add_kernel)(a, b)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, a + b)
    x = torch.randn(250, 512)
    g = torch.randn(512)
    simulated = nki.simulate(rmsnorm.rmsnorm_kernel)(x, g)
    on_device = rmsnorm.rmsnorm_kernel(x.to("neuron"), g.to("neuron")).cpu()
    assert torch.equal(simulated, on_device)


def test_simulate_updates_written_arguments_in_place():
    x = torch.randn(128, 512)
    out = torch.zeros(128, 512)
    nki.simulate(sin_cos.elementwise_tiled_kernel)(x, out, nl.sin)
    torch.testing.assert_close(out, x.sin())


def test_a_tile_read_before_it_is_written_holds_nan():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf))
        return out

    assert torch.isnan(nki.simulate(kernel)(torch.empty(1))).all()


# -- the rules, checked while tracing ---------------------------------------

def too_many_partitions(x):
    tile = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.sbuf)
    nl.store(x, value=tile)


def load_from_sbuf(x):
    tile = nl.load(x)
    again = nl.load(tile)
    nl.store(x, value=again)


def slice_past_the_end(x):
    tile = nl.load(x[0:128, 0:4096])
    nl.store(x[0:128, 0:4000], value=tile)


def never_written(x):
    out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    return out


RULES = [
    (too_many_partitions, "err_num_partition_exceed_arch_limit", "nl.ndarray((256"),
    (load_from_sbuf, "err_unsupported_memory", "nl.load(tile)"),
    (slice_past_the_end, "err_tensor_access_out_of_bound", "x[0:128, 0:4096]"),
    (never_written, "err_tensor_output_not_written_to", "nl.ndarray((128, 8)"),
]


@pytest.mark.parametrize("body,code,text", RULES, ids=[r[1] for r in RULES])
def test_a_broken_rule_raises_at_the_call_naming_it_and_the_kernels_line(body, code, text):
    kernel = nki.jit(body)
    x = torch.randn(128, 4000, device="neuron")
    with pytest.raises(NkiValidationError) as raised:
        kernel(x)
    assert raised.value.code == code
    assert line_of(body, text) in str(raised.value)
    assert isinstance(raised.value, AssertionError)
    # The process goes on using the device.
    assert torch.equal((x + 1).cpu(), x.cpu() + 1)


@pytest.mark.parametrize("body,code,text", RULES, ids=[r[1] for r in RULES])
def test_a_broken_rule_raises_at_compile_time_through_an_nki_op(body, code, text):
    kernel = nki.jit(body)
    name = f"nki_test::broken_{code}"

    @torch_neuronx.nki_op(name, mutates_args={})
    def op(x: torch.Tensor) -> torch.Tensor:
        out = x.clone()
        kernel(out)
        return out

    torch._dynamo.reset()
    compiled = torch.compile(lambda t: op(t) + 1, backend="neuron", fullgraph=True)
    with pytest.raises(Exception) as raised:
        compiled(torch.randn(128, 4000, device="neuron"))
    assert code in str(raised.value)


def matmul_case(stationary_shape, moving_shape, dst_shape, dst_buffer=nl.psum):
    @nki.jit
    def kernel(x):
        stationary = nl.ndarray(stationary_shape, dtype=nl.bfloat16, buffer=nl.sbuf)
        moving = nl.ndarray(moving_shape, dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(stationary, 0)
        nisa.memset(moving, 0)
        dst = nl.ndarray(dst_shape, dtype=nl.float32, buffer=dst_buffer)
        nisa.nc_matmul(dst, stationary, moving)
        nl.store(x, value=dst[0:1, 0:1])

    return kernel


@pytest.mark.parametrize("stationary,moving,dst,buffer,code,what", [
    ((128, 128), (128, 1024), (128, 512), nl.psum, "err_size_of_dimension_exceed_arch_limit",
     "moving"),
    ((128, 256), (128, 512), (128, 512), nl.psum, "err_size_of_dimension_exceed_arch_limit",
     "stationary"),
    ((128, 128), (128, 512), (128, 512), nl.sbuf, "err_unsupported_memory", "'dst'"),
    ((128, 128), (64, 512), (128, 512), nl.psum, "err_num_partition_mismatch", "stationary"),
])
def test_matmul_limits(stationary, moving, dst, buffer, code, what):
    kernel = matmul_case(stationary, moving, dst, buffer)
    with pytest.raises(NkiValidationError) as raised:
        kernel(torch.empty(1, 1, device="neuron"))
    assert raised.value.code == code and what in str(raised.value)


def test_nine_live_psum_banks_do_not_fit_in_eight():
    @nki.jit
    def kernel(x):
        tiles = [nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(9)]
        total = nl.copy(tiles[0])
        for tile in tiles[1:]:
            total = nl.add(total, tile)
        nl.store(x, value=total)

    with pytest.raises(NkiValidationError) as raised:
        kernel(torch.empty(128, 512, device="neuron"))
    assert raised.value.code == "err_out_of_memory" and "PSUM" in str(raised.value)
    assert line_of(kernel.function, "range(9)") in str(raised.value)


def test_tiles_whose_lives_do_not_overlap_share_sbuf():
    @nki.jit
    def kernel(x):
        # 64 tiles of 96 KiB per partition: only two fit at once.
        for i in nl.affine_range(64):
            tile = nl.load(x[:, nl.ds(0, 512)], dtype=nl.float32)
            big = nl.ndarray((128, 24576), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(big, float(i))
            nl.store(x[:, nl.ds(0, 512)], value=nl.add(tile, big[:, 0:512]))

    x = torch.zeros(128, 512)
    nki.simulate(kernel)(x)
    assert torch.equal(x, torch.full((128, 512), float(sum(range(64)))))


def test_a_raw_kernel_on_tensors_that_require_grad_says_to_use_nki_op():
    x = torch.randn(128, 512, device="neuron", requires_grad=True)
    with pytest.raises(RuntimeError, match="nki_op"):
        sin_cos.elementwise_tiled_kernel(x, torch.empty(128, 512, device="neuron"), nl.sin)


def test_kernel_arguments_are_tensors_and_hashable_constants():
    @nki.jit
    def scale(x, factor):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.multiply(nl.load(x), factor))
        return out

    x = torch.randn(128, 16, device="neuron")
    torch.testing.assert_close(scale(x, 3.0).cpu(), x.cpu() * 3)
    torch.testing.assert_close(scale(x, 0.5).cpu(), x.cpu() * 0.5)
    with pytest.raises(TypeError, match="tuples"):
        scale(x, [1.0])


# -- the daemon's side ----------------------------------------------------------

def handmade_plan(instructions, allocations=None):
    """A kernel the tracer did not make: two HBM tensors of 128 x 4 floats
    and a tile of [128, 4] in SBUF."""
    allocations = allocations or [
        (0, torch.float32, "x", 0, 512, 0, 0, 0, 0, [128, 4]),
        (0, torch.float32, "out", 1, 512, 0, 0, 0, 0, [128, 4]),
        (1, torch.float32, "tile", 0, 0, 128, 4, 0, 0, []),
    ]
    return torch_neuronx._C._nki_plan("handmade", (128, 212_984, 16_384), allocations,
                                      instructions, ["handmade.py:1"])


def access(allocation, dims, offset=0):
    return (allocation, offset, dims)


def test_the_daemon_refuses_a_kernel_reaching_outside_its_tile():
    outside = handmade_plan([
        ("dma_copy", [access(2, [(4, 128), (1, 8)]), access(0, [(4, 128), (1, 4)])], [], None,
         [], [], [], 0)])
    x = torch.randn(128, 4, device="neuron")
    out = torch.empty(128, 4, device="neuron")
    with pytest.raises(ValueError, match="outside tile 'tile'"):
        torch_neuronx._C._nki_launch(outside, [x, out], 0, True)
    with pytest.raises(ValueError, match="outside tile 'tile'"):
        torch_neuronx._C._nki_simulate(outside, [x.cpu(), out.cpu()])


def test_operands_that_disagree_fail_the_launch_and_the_stream_goes_on():
    disagree = handmade_plan([
        ("dma_copy", [access(2, [(4, 128), (1, 4)]), access(0, [(4, 128), (1, 4)])], [], None,
         [], [], [], 0),
        ("tensor_tensor", [access(2, [(4, 128), (1, 4)]), access(2, [(4, 128), (1, 4)]),
                           access(2, [(4, 128), (1, 2)])], ["add"], None, [], [], [], 0),
    ])
    x = torch.randn(128, 4, device="neuron")
    out = torch.empty(128, 4, device="neuron")
    with pytest.raises(ValueError, match="instruction 1 \\(tensor_tensor\\) at handmade.py:1"):
        torch_neuronx._C._nki_launch(disagree, [x, out], 0, True)
    assert torch.equal((x * 2).cpu(), x.cpu() * 2)


def test_a_kernel_launch_is_asynchronous_on_the_current_stream():
    x = torch.randn(256, 1024, device="neuron")
    out = torch.empty_like(x)
    sin_cos.elementwise_tiled_kernel(x, out, nl.sin)          # first launch: waited for
    stream = torch_neuronx.Stream()
    with torch_neuronx.stream(stream):
        y = x * 2
        sin_cos.elementwise_tiled_kernel(y, out, nl.sin)
    stream.synchronize()
    torch.testing.assert_close(out.cpu(), (x.cpu() * 2).sin(), atol=1e-5, rtol=1e-5)


def test_the_profiler_shows_a_kernels_launch_under_its_name():
    from torch.profiler import ProfilerActivity, profile

    a = torch.randn(250, 512, device="neuron")
    g = torch.randn(512, device="neuron")
    rmsnorm.rmsnorm_kernel(a, g)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        rmsnorm.rmsnorm_kernel(a, g)
        torch.neuron.synchronize()
    device_rows = [event for event in prof.events()
                   if event.device_type == torch.autograd.DeviceType.PrivateUse1]
    assert "rmsnorm_kernel" in [event.name for event in device_rows]


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_float8_tiles_round_as_the_cpu_does(dtype):
    @nki.jit
    def quantize(x, out):
        quantized = nl.ndarray(x.shape, dtype=out.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(quantized, nl.load(x))
        nl.store(out, value=quantized)

    x = torch.randn(128, 64, device="neuron")
    out = torch.empty(128, 64, dtype=dtype, device="neuron")
    quantize(x, out)
    assert torch.equal(out.cpu().float(), x.cpu().to(dtype).float())


# -- nki.estimate -----------------------------------------------------------------

def matmul_naive(lhsT, rhs):
    contraction, rows = lhsT.shape
    _, columns = rhs.shape
    out = nl.ndarray((rows, columns), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(rows // 128):
        for n in nl.affine_range(columns // 512):
            accumulator = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(contraction // 128):
                stationary = nl.load(lhsT[nl.ds(k * 128, 128), nl.ds(m * 128, 128)])
                moving = nl.load(rhs[nl.ds(k * 128, 128), nl.ds(n * 512, 512)])
                nisa.nc_matmul(accumulator, stationary, moving, accumulate=k > 0)
            nl.store(out[nl.ds(m * 128, 128), nl.ds(n * 512, 512)],
                     value=nl.copy(accumulator, dtype=lhsT.dtype))
    return out


def matmul_hoisted(lhsT, rhs):
    contraction, rows = lhsT.shape
    _, columns = rhs.shape
    out = nl.ndarray((rows, columns), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    moving = [nl.load(rhs[nl.ds(k * 128, 128), :]) for k in range(contraction // 128)]
    for m in nl.affine_range(rows // 128):
        stationary = [nl.load(lhsT[nl.ds(k * 128, 128), nl.ds(m * 128, 128)])
                      for k in range(contraction // 128)]
        for n in nl.affine_range(columns // 512):
            accumulator = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(contraction // 128):
                nisa.nc_matmul(accumulator, stationary[k], moving[k][:, nl.ds(n * 512, 512)],
                               accumulate=k > 0)
            nl.store(out[nl.ds(m * 128, 128), nl.ds(n * 512, 512)],
                     value=nl.copy(accumulator, dtype=lhsT.dtype))
    return out


def test_estimate_predicts_that_hoisting_loads_out_of_a_matmuls_loops_pays():
    lhsT = torch.empty(1024, 1024, dtype=torch.bfloat16)
    rhs = torch.empty(1024, 2048, dtype=torch.bfloat16)
    naive = nki.estimate(nki.jit(matmul_naive))(lhsT, rhs)
    hoisted = nki.estimate(nki.jit(matmul_hoisted))(lhsT, rhs)
    assert hoisted.total_us < naive.total_us / 2
    assert hoisted.mfu > 2 * naive.mfu
    # Both do the same matmuls; the naive kernel moves four times the bytes.
    assert hoisted.busy_us["tensor"] == pytest.approx(naive.busy_us["tensor"])
    assert naive.hbm_bytes > 3 * hoisted.hbm_bytes
    assert "predicted" in str(hoisted) and "tensor" in str(hoisted)


def test_estimate_puts_each_instruction_on_its_engine():
    softmax_estimate = nki.estimate(softmax.softmax_kernel)(
        torch.empty(512, 2048, dtype=torch.bfloat16))
    assert softmax_estimate.busy_us["tensor"] == 0
    assert softmax_estimate.busy_us["vector"] > 0 and softmax_estimate.busy_us["scalar"] > 0
    assert softmax_estimate.mfu == 0
    matmul_estimate = nki.estimate(matmul.matmul_kernel)(
        torch.empty(512, 1024, dtype=torch.bfloat16), torch.empty(512, 1024, dtype=torch.bfloat16))
    assert matmul_estimate.busy_us["tensor"] > 0 and matmul_estimate.busy_us["scalar"] == 0


def test_estimate_overlaps_independent_engines_and_serializes_dependent_ones():
    @nki.jit
    def independent(x):
        a = nl.ndarray((128, 4096), dtype=nl.float32, buffer=nl.sbuf)
        b = nl.ndarray((128, 4096), dtype=nl.float32, buffer=nl.sbuf)
        c = nl.ndarray((128, 4096), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(a, 1.0)                          # Vector
        nisa.activation(b, nl.exp, c)                # Scalar, independent of a
        nl.store(x, value=nl.add(a[:, 0:1], b[:, 0:1]))

    @nki.jit
    def dependent(x):
        a = nl.ndarray((128, 4096), dtype=nl.float32, buffer=nl.sbuf)
        b = nl.ndarray((128, 4096), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(a, 1.0)                          # Vector
        nisa.activation(b, nl.exp, a)                # Scalar, reads a
        nl.store(x, value=b[:, 0:1])

    x = torch.empty(128, 1)
    apart = nki.estimate(independent)(x)
    chained = nki.estimate(dependent)(x)
    assert chained.total_us > apart.total_us
    work = chained.busy_us["vector"] + chained.busy_us["scalar"]
    assert chained.total_us >= work


HOST_BUDGET = """
import torch, torch_neuronx, nki, nki.language as nl

@nki.jit
def exponentials(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.exp(nl.load(x)))
    return out

x = torch.randn(128, 8192, dtype=torch.bfloat16, device="neuron")
try:
    exponentials(x)
except torch.OutOfMemoryError as error:
    print("refused:", "exponentials" in str(error))
small = torch.randn(128, 64, dtype=torch.bfloat16, device="neuron")
print("small runs:", torch.equal(exponentials(small).cpu(), small.cpu().float().exp().bfloat16()))
"""


def test_a_kernels_temporaries_count_against_the_launch_host_budget(own_daemon, run_python):
    directory = tempfile.mkdtemp(prefix="nrt-nki-")
    socket_path = os.path.join(directory, "rtd.sock")
    # 1 MiB: the kernel's float32 copy of a [128, 8192] bfloat16 tile is 4 MiB.
    own_daemon(socket_path, config_text="[sim]\nmax_launch_host_bytes = 1048576\n")
    result = run_python(HOST_BUDGET, env={"NEURON_RTD_ADDRESS": "unix:" + socket_path})
    assert result.returncode == 0, result.stderr
    assert "refused: True" in result.stdout and "small runs: True" in result.stdout


def test_tiles_the_kernel_places_with_address_stay_there():
    @nki.jit
    def halves(x):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        # Two 64-partition tiles at the same bytes of different partitions.
        top = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.sbuf, name="top", address=(0, 0))
        bottom = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.sbuf, name="bottom",
                            address=(64, 0))
        nisa.dma_copy(top, x[0:64, :])
        nisa.dma_copy(bottom, x[64:128, :])
        nisa.tensor_scalar(top, top, nl.multiply, 2.0)
        nisa.tensor_scalar(bottom, bottom, nl.add, 1.0)
        nl.store(out[0:64, :], value=top)
        nl.store(out[64:128, :], value=bottom)
        return out

    x = torch.randn(128, 64, device="neuron")
    expected = torch.cat([x.cpu()[:64] * 2, x.cpu()[64:] + 1])
    torch.testing.assert_close(halves(x).cpu(), expected)
    traced = nki.trace(halves, torch.empty(128, 64))
    placed = {a.name: (a.partition_start, a.byte_offset) for a in traced.trace.allocations
              if a.space == "sbuf"}
    assert placed["top"] == (0, 0) and placed["bottom"] == (64, 0)


@pytest.mark.parametrize("shape,buffer,address,text", [
    ((64, 8), nl.sbuf, (16, 0), "starts at partition 0, 64"),
    ((128, 8), nl.psum, (0, 1024), "bank boundary"),
    ((128, 50000), nl.sbuf, (0, 20000), "do not fit"),
])
def test_an_address_the_hardware_cannot_use_is_refused(shape, buffer, address, text):
    @nki.jit
    def kernel(x):
        tile = nl.ndarray(shape, dtype=nl.float32, buffer=buffer, address=address)
        nisa.memset(tile, 0.0)
        nl.store(x, value=tile[0:1, 0:1])

    with pytest.raises(NkiValidationError, match=text) as raised:
        kernel(torch.empty(1, 1, device="neuron"))
    assert raised.value.code == "err_invalid_address"


def test_the_allocator_keeps_clear_of_placed_tiles():
    @nki.jit
    def kernel(x):
        placed = nl.ndarray((128, 25000), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
        nisa.memset(placed, 1.0)
        other = nl.ndarray((128, 30000), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(other, 2.0)
        nl.store(x, value=nl.add(placed[:, 0:1], other[:, 0:1]))

    # 100,000 + 120,000 bytes per partition: more than one partition holds.
    with pytest.raises(NkiValidationError) as raised:
        kernel(torch.empty(128, 1, device="neuron"))
    assert raised.value.code == "err_out_of_memory"


def test_kernels_from_several_threads_on_several_cores_at_once():
    import threading

    devices = min(2, torch.neuron.device_count())
    failures = []

    def work(index):
        try:
            device = torch.device("neuron", index % devices)
            stream = torch_neuronx.Stream(device=device)
            with torch.neuron.device(device), torch_neuronx.stream(stream):
                for round_ in range(10):
                    a = torch.full((128, 512), float(index + round_), device=device)
                    b = torch.ones(128, 512, device=device)
                    out = tensor_add.tensor_add_kernel(a, b)
                    if not torch.equal(out.cpu(), torch.full((128, 512), index + round_ + 1.0)):
                        failures.append((index, round_))
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append(repr(error))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_expand_dims_and_broadcast_to_are_views():
    @nki.jit
    def scale_rows(x, weights):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        tile = nl.load(x)                                    # [128, 4, 8]
        row = nl.load(weights.reshape((1, 8)))               # [1, 8]
        every = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(every, nl.ones((1, 128), nl.float32), row)   # [128, 8] in PSUM
        repeated = nl.copy(every).expand_dims(1).broadcast_to((128, 4, 8))
        nl.store(out, value=nl.multiply(tile, repeated))
        return out

    x = torch.randn(128, 4, 8, device="neuron")
    weights = torch.randn(8, device="neuron")
    torch.testing.assert_close(scale_rows(x, weights).cpu(), x.cpu() * weights.cpu())

    @nki.jit
    def partitions(x):
        nl.store(x, value=nl.load(x[0:1, :]).broadcast_to((128, 8)))

    with pytest.raises(NkiValidationError, match="partitions are copied"):
        partitions(torch.empty(128, 8, device="neuron"))


def test_where_and_predicated_copies():
    @nki.jit
    def clipped(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        tile = nl.load(x)
        nl.store(out, value=nl.where(nl.greater(tile, 0.5), tile, 0.5))
        return out

    x = torch.randn(128, 64, device="neuron")
    torch.testing.assert_close(clipped(x).cpu(), torch.where(x.cpu() > 0.5, x.cpu(), 0.5))

    @nki.jit
    def negatives_zeroed(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        tile = nl.load(x)
        zeros = nl.zeros(x.shape, dtype=x.dtype)
        nisa.tensor_copy_predicated(tile, zeros, nl.less(tile, 0.0))
        nl.store(out, value=tile)
        return out

    torch.testing.assert_close(negatives_zeroed(x).cpu(), x.cpu().clamp(min=0))

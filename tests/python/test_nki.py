"""NKI kernels on neuron: the acceptance kernels of examples/nki against
PyTorch on the CPU (eager, torch.compile and nki.simulate), and kernels on
several threads and cores at once. The tracer's rules are in
test_nki_rules.py, the daemon's side in test_nki_daemon.py, nki.estimate in
test_nki_estimate.py."""

import os
import sys

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


@nki.jit
def _row_sums_as_views(x):
    """Returns its outputs as views: a reshape (as nki-library's
    cascaded_max does) and a column slice."""
    sums = nl.ndarray((1, x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    pair = nl.ndarray((x.shape[0], 2), dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.load(x)
    total = nl.sum(tile, axis=1, keepdims=True)
    nl.store(sums, nl.transpose(total))
    nl.store(pair[:, 0:1], total)
    nl.store(pair[:, 1:2], total)
    return sums.reshape((2, x.shape[0] // 2, 1)), pair[:, 1:2]


@torch_neuronx.nki_op("nki_test::row_sums_as_views", mutates_args={})
def row_sums_as_views(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return _row_sums_as_views(x)


@pytest.mark.parametrize("how", ["simulate", "numpy", "device", "compiled"])
def test_a_kernel_returns_the_views_it_returned(how):
    x = torch.randn(8, 64)
    expected = x.sum(dim=1, keepdim=True)
    if how == "simulate":
        reshaped, column = nki.simulate(_row_sums_as_views)(x)
    elif how == "numpy":
        reshaped, column = nki.simulate(_row_sums_as_views)(x.numpy())
        reshaped, column = torch.from_numpy(reshaped), torch.from_numpy(column.copy())
    elif how == "device":
        reshaped, column = (t.cpu() for t in _row_sums_as_views(x.to("neuron")))
    else:
        compiled = torch.compile(row_sums_as_views, backend="neuron", fullgraph=True)
        reshaped, column = (t.cpu() for t in compiled(x.to("neuron")))
    assert reshaped.shape == (2, 4, 1) and column.shape == (8, 1)
    torch.testing.assert_close(reshaped, expected.reshape(2, 4, 1))
    torch.testing.assert_close(column, expected)


def test_a_tile_read_before_it_is_written_holds_nan():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf))
        return out

    assert torch.isnan(nki.simulate(kernel)(torch.empty(1))).all()


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
        # A view repeating one partition: the DMA reads it as it is.
        nl.store(x, value=nl.load(x[0:1, :]).broadcast_to((128, 8)))

    rows = torch.randn(128, 8, device="neuron")
    first = rows[0].cpu()
    partitions(rows)
    assert torch.equal(rows.cpu(), first.expand(128, 8))


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

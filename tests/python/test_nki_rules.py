"""The hardware rules the NKI tracer enforces, raised at the call (or at
compile time through an nki_op) naming the rule and the kernel's line:
partitions, buffers, bounds, matmul limits, PSUM banks, SBUF sharing, tile
placement and the allocator."""

import os
import sys

import pytest
import torch
import torch_neuronx

import nki
import nki.isa as nisa
import nki.language as nl
from nki import NkiValidationError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "nki"))

import sin_cos  # noqa: E402

HERE = os.path.basename(__file__)


def line_of(function, text):
    """file:line of the first line of `function` holding `text`."""
    import inspect
    lines, first = inspect.getsourcelines(function)
    for offset, line in enumerate(lines):
        if text in line:
            return f"{HERE}:{first + offset}"
    raise AssertionError(f"{text!r} not in {function.__name__}")

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

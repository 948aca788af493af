"""What the daemon does with NKI kernels it did not trace itself (refusing
accesses outside a tile, operands that disagree), and kernels as launches:
asynchronous on the stream, in the profiler, float8, the launch host
budget."""

import os
import sys
import tempfile

import pytest
import torch
import torch_neuronx

import nki
import nki.isa as nisa
import nki.language as nl

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "nki"))

import rmsnorm  # noqa: E402
import sin_cos  # noqa: E402

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
    # As on CUDA, the side stream waits for what the current one queued (x,
    # and out's first launch, which is asynchronous too once another test of
    # this process launched the kernel).
    stream.wait_stream(torch_neuronx.current_stream())
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

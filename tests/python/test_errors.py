"""PyTorch's error semantics on neuron: an operator's error raises the CPU's
exception type at the call (a signature's first launch is waited for) or at
the next synchronization, and the process keeps working after catching it.
Only faults (memory the session does not own, a lost daemon) are sticky."""

import pytest
import torch
import torch.nn.functional as F

import torch_neuronx  # noqa: F401


def test_a_dtype_the_kernel_lacks_raises_at_the_call_and_the_stream_goes_on():
    x = torch.arange(10, device="neuron", dtype=torch.int32)
    with pytest.raises(NotImplementedError, match="GeluKernelImpl"):
        F.gelu(x)
    assert torch.equal((x + 1).cpu(), torch.arange(1, 11, dtype=torch.int32))


def test_an_asynchronous_index_error_raises_once_at_the_next_sync():
    weight = torch.randn(5, 3, device="neuron")
    good = torch.tensor([0, 1], device="neuron")
    expected = F.embedding(good.cpu(), weight.cpu())
    # The signature's first launch (in range) is checked at the call; this
    # launch of the same signature fails in the daemon, asynchronously.
    torch.testing.assert_close(F.embedding(good, weight).cpu(), expected)
    F.embedding(torch.tensor([0, 7], device="neuron"), weight)
    with pytest.raises(IndexError, match="index out of range"):
        torch.neuron.synchronize()
    torch.neuron.synchronize()
    torch.testing.assert_close(F.embedding(good, weight).cpu(), expected)


def test_after_a_signatures_launch_fails_its_next_errors_come_at_the_call():
    # A shape no other test uses: the signature's first launch is this one.
    a = torch.zeros(7, 3, device="neuron")
    for bad in (7, -8, 100):
        index = torch.ones(13, dtype=torch.int64, device="neuron")
        index[-1] = bad
        with pytest.raises(IndexError, match="out of bounds"):
            a[index]
        with pytest.raises(IndexError, match="out of bounds"):
            a[index] = 1.0
    a[torch.ones(13, dtype=torch.int64, device="neuron")] = 2.0
    assert a.sum().item() == 6.0


def test_index_errors_have_the_cpus_type():
    with pytest.raises(IndexError, match="out of bounds"):
        torch.zeros(3, device="neuron")[torch.tensor([5], device="neuron")].cpu()
    assert torch.zeros(3, device="neuron").sum().item() == 0


def _cpu_error(call, *tensors):
    with pytest.raises(RuntimeError) as cpu:
        call(*tensors)
    return str(cpu.value)


@pytest.mark.parametrize("call", [
    lambda t: torch._foreach_addcdiv([t], [t], [t]),
    lambda t: torch.addcdiv(t, t, t),
    lambda t: torch.addcdiv(t, t, t, out=t),
    lambda t: t.addcdiv_(t, t),
], ids=["foreach", "functional", "out", "in_place"])
def test_addcdiv_on_integers_raises_the_cpus_message(call):
    t = torch.tensor(1)
    expected = _cpu_error(call, t)
    assert _cpu_error(call, t.to("neuron")) == expected


@pytest.mark.parametrize("index", [
    lambda a: a[[0, 1], [0, 1, 2]],
    lambda a: a.__setitem__(([0, 1], [0, 1, 2]), 0),
    lambda a: a[False, [0, 1]],
    lambda a: a[torch.tensor([], device=a.device)],
], ids=["get_shapes", "set_shapes", "bool_and_list", "float_index"])
def test_index_tensors_that_cannot_index_raise_the_cpus_index_error(index):
    cpu = torch.zeros(5, 5)
    with pytest.raises(IndexError) as expected:
        index(cpu)
    with pytest.raises(IndexError) as actual:
        index(cpu.to("neuron"))
    assert str(actual.value).split("\n")[0] == str(expected.value).split("\n")[0]


@pytest.mark.parametrize("sample, wrong", [
    (lambda t: t.random_(0, 100), lambda t: t.random_(0, 100000)),
    (lambda t: t.random_(0, 100), lambda t: t.random_(5, 2)),
    (lambda t: t.float().uniform_(0, 1), lambda t: t.float().uniform_(2, 1)),
    (lambda t: t.float().normal_(0, 1), lambda t: t.float().normal_(0, -1)),
    (lambda t: t.float().exponential_(1), lambda t: t.float().exponential_(-1)),
], ids=["random_bounds", "random_order", "uniform", "normal", "exponential"])
def test_a_samplers_wrong_numbers_raise_at_the_call_as_on_the_cpu(sample, wrong):
    cpu = torch.empty(8, dtype=torch.int16)
    with pytest.raises(RuntimeError) as expected:
        wrong(cpu)
    device = cpu.to("neuron")
    sample(device)  # the signature is known: its launches run asynchronously
    with pytest.raises(RuntimeError) as actual:
        wrong(device)
    assert str(actual.value).split("\n")[0] == str(expected.value).split("\n")[0]
    torch.neuron.synchronize()
    assert sample(device).cpu().isfinite().all()


@pytest.mark.parametrize("call", [
    lambda a, b: torch._foreach_add(a, b),
    lambda a, b: torch._foreach_add_(a, b),
    lambda a, b: torch._foreach_mul(a, b),
    lambda a, b: torch._foreach_addcdiv(a, b, b),
    lambda a, b: torch._foreach_add_([t[:1].clone() for t in a], a),
], ids=["add", "add_in_place", "mul", "addcdiv", "in_place_output_shape"])
def test_foreach_shape_mismatches_raise_the_cpus_message(call):
    cpu = ([torch.zeros(10, 10) for _ in range(3)], [torch.ones(11, 11) for _ in range(3)])
    expected = _cpu_error(call, *cpu)
    device = tuple([t.to("neuron") for t in tensors] for tensors in cpu)
    assert _cpu_error(call, *device) == expected


@pytest.mark.parametrize("call", [
    lambda x, out: torch.all(x, out=out),
    lambda x, out: torch.any(x, 0, out=out),
], ids=["whole", "dim"])
def test_all_and_any_refuse_a_result_that_is_not_bool_as_on_the_cpu(call):
    x = torch.ones(3, 2)
    expected = _cpu_error(call, x, torch.empty(0))
    assert _cpu_error(call, x.to("neuron"), torch.empty(0, device="neuron")) == expected
    result = torch.empty(0, dtype=torch.bool, device="neuron")
    call(x.to("neuron"), result)
    assert result.cpu().all()


def test_mode_with_out_runs_on_neuron():
    x = torch.tensor([[1.0, 2.0, 2.0], [3.0, 3.0, 1.0]])
    values, indices = torch.empty(0, device="neuron"), torch.empty(0, device="neuron", dtype=torch.long)
    torch.mode(x.to("neuron"), 1, out=(values, indices))
    expected = torch.mode(x, 1)
    assert torch.equal(values.cpu(), expected.values)
    assert torch.equal(indices.cpu(), expected.indices)


def test_tensors_past_64_dimensions_run_and_reductions_refuse_them_as_on_the_cpu():
    t = torch.ones([1] * 65, device="neuron")
    t.uniform_()
    assert t.dim() == 65 and 0 <= t.item() < 1
    assert torch.equal((t * 2).cpu(), t.cpu() * 2)
    with pytest.raises(RuntimeError, match="only tensors with up to 64 dims are supported"):
        torch.amax(t, dim=0)
    assert torch.ones(3, device="neuron").sum().item() == 3


def test_an_error_on_a_side_stream_does_not_reach_the_default_stream():
    weight = torch.randn(5, 3, device="neuron")
    F.embedding(torch.tensor([1], device="neuron"), weight)
    side = torch.neuron.Stream()
    with torch.neuron.stream(side):
        F.embedding(torch.tensor([9], device="neuron"), weight)
    torch.neuron.current_stream().synchronize()
    with pytest.raises(IndexError):
        side.synchronize()
    side.synchronize()


def test_a_killed_session_raises_accelerator_error(run_python):
    result = run_python(
        "import os, subprocess, torch, torch_neuronx\n"
        "x = torch.ones(4, device='neuron')\n"
        "assert x.sum().item() == 4\n"
        "info = torch_neuronx._C._session_info()\n"
        "ctl = os.path.join(os.path.dirname(torch_neuronx._C.__file__), 'bin', 'neuronctl')\n"
        "subprocess.run([ctl, '--address', info['address'], 'kill', str(info['session_id'])],"
        " check=True, capture_output=True)\n"
        "try:\n"
        "    (x * 2).sum().item()\n"
        "except torch.AcceleratorError as error:\n"
        "    print('AcceleratorError', isinstance(error, RuntimeError), 'closed by' in str(error))\n"
    )
    assert result.stdout.strip().splitlines()[-1] == "AcceleratorError True True", result.stdout


@pytest.mark.parametrize("call", [
    lambda d: torch.arange(8, device=d).view(2, 4).roll(shifts=(1,), dims=(1, 2)),
    lambda d: torch.complex(torch.ones(2, device=d), torch.ones(2, device=d),
                            out=torch.empty(2, device=d)),
])
def test_where_the_meta_kernel_refuses_the_cpus_own_error_is_raised(call):
    # PyTorch's Python meta kernels check some arguments in another order or
    # word them as its reference implementations do; programs and PyTorch's
    # tests match on the CPU's words.
    with pytest.raises(Exception) as on_cpu:
        call("cpu")
    with pytest.raises(type(on_cpu.value)) as on_neuron:
        call("neuron")
    assert str(on_neuron.value) == str(on_cpu.value)


@pytest.mark.parametrize("mask", [[True], [False] * 6])
def test_a_mask_of_the_wrong_shape_raises_the_cpus_index_error(mask):
    # Not a silent arr[0:1]: the mask must cover the dimensions it indexes.
    for device in ("cpu", "neuron"):
        arr = torch.ones(5, 4, 3, device=device)
        with pytest.raises(IndexError, match=r"The shape of the mask \[\d\] at index 0 does not "
                                             r"match the shape of the indexed tensor \[5, 4, 3\]"):
            arr[torch.tensor(mask, device=device)]
        with pytest.raises(IndexError, match="The shape of the mask"):
            arr[torch.tensor(mask, device=device)] = 0.0


def test_a_cpu_tensor_indexed_with_neuron_indices_raises_cudas_error():
    x = torch.randn(3, 4)
    index = torch.tensor([0, 2], device="neuron")
    with pytest.raises(RuntimeError, match=r"indices should be either on cpu or on the same device "
                                           r"as the indexed tensor \(cpu\)"):
        x[index]
    with pytest.raises(RuntimeError, match=r"indices should be either on cpu"):
        x[:, index]
    assert torch.equal(x.to("neuron")[index.cpu()].cpu(), x[index.cpu()])  # CPU indices: fine


def test_a_neuron_tensor_indexed_with_indices_on_another_neuron_device_raises_cudas_error():
    if torch.neuron.device_count() < 2:
        pytest.skip("needs two neuron devices")
    x = torch.randn(3, 4, device="neuron:0")
    with pytest.raises(RuntimeError, match=r"indices should be either on cpu or on the same device "
                                           r"as the indexed tensor \(neuron:0\)"):
        x[torch.tensor([0, 2], device="neuron:1")]


OVERLAP = "unsupported operation"


def test_writes_into_memory_an_input_shares_raise_as_on_the_cpu():
    # The daemon's kernels see each argument as memory of its own; the CPU's
    # overlap checks are made at the call.
    for device in ("cpu", "neuron"):
        x = torch.arange(6.0, device=device)
        with pytest.raises(RuntimeError, match=OVERLAP):
            x[:-1].copy_(x[1:])
        expanded = torch.zeros(1, device=device).expand(6)
        with pytest.raises(RuntimeError, match=OVERLAP):
            expanded.copy_(torch.ones(6, device=device))
        index = torch.tensor([2, 1, 0], device=device)
        with pytest.raises(RuntimeError, match=OVERLAP):
            torch.pow(x[:3], 2, out=x[1:4])
        with pytest.raises(RuntimeError, match=OVERLAP):
            torch.pow(2, x[:3], out=x[1:4])
        with pytest.raises(RuntimeError, match=OVERLAP):
            x.put_(index, x[:3])
        with pytest.raises(RuntimeError, match=OVERLAP):
            x.index_put_((index,), x[:3])
        mask = torch.tensor([True, False, True, True, False], device=device)
        with pytest.raises(RuntimeError, match=OVERLAP):
            mask[1:].masked_fill_(mask[:-1], False)
        with pytest.warns(UserWarning, match="expanded tensors"):
            expanded.index_fill_(0, index, 1.0)
        for _ in range(2):  # the same view: refused by index_put_, every time
            with pytest.raises(RuntimeError, match=OVERLAP):
                index.index_put_((index,), index)
        assert x.cpu().tolist() == list(range(6))  # nothing was written
        x.add_(x)  # the same view: fine
        x[::2].mul_(x[1::2])  # disjoint: fine
        assert x.cpu().tolist() == [0.0, 2.0, 24.0, 6.0, 80.0, 10.0]
        # Checked on zero-filled copies: a check that depends on the values
        # (an integer division by zero) is not the call's.
        integers = torch.tensor([6, 7], device=device)
        integers.div_(torch.tensor([2, 3], device=device), rounding_mode="floor")
        assert integers.cpu().tolist() == [3, 2]

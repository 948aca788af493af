"""PyTorch's OpInfo database on `neuron`, against the CPU.

Every operator of `op_db` (torch.testing._internal.common_methods_invocations,
shipped in the wheel) runs its own samples three ways: forward in float32,
forward in bfloat16, and gradients in float32 for differentiable operators.
Samples are made on the CPU; their copies on `neuron` must give the CPU's
results (values, dtypes, shapes; the exception type where the CPU raises),
without the operator falling back to the CPU, and must leave the device
usable.

One test per (operator, mode). CI runs the first sample of each
(NEURON_CONFORMANCE unset, or "fast"); `deploy/dev.sh conformance`
(NEURON_CONFORMANCE=all) runs every sample and prints the pass rate.
Outcomes the device is not meant to reproduce are declared in
expected_failures.py, each with its reason.
"""

import os

import pytest
import torch
from torch.utils._pytree import tree_flatten, tree_map

import torch_neuronx

from expected_failures import EXPECTED_FAILURES, RANDOM_OUTPUTS, RANDOM_SAMPLES
from outcomes import Outcome, record

pytest.importorskip("expecttest")  # common_methods_invocations imports it
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

ALL_SAMPLES = os.environ.get("NEURON_CONFORMANCE") == "all"
MODES = ("float32", "bfloat16", "grad")
TOLERANCES = {
    torch.float32: dict(rtol=1e-4, atol=1e-4),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
}


def op_id(op):
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def cases():
    for op in op_db:
        dtypes = op.supported_dtypes("cpu")
        for mode in MODES:
            dtype = torch.bfloat16 if mode == "bfloat16" else torch.float32
            if dtype not in dtypes:
                continue
            if mode == "grad" and (not op.supports_autograd or op_id(op) in RANDOM_OUTPUTS):
                continue
            yield pytest.param(op, mode, id=f"{op_id(op)}-{mode}")


def to_neuron(value, requires_grad):
    if not isinstance(value, torch.Tensor):
        return value
    moved = value.detach().to("neuron")
    return moved.requires_grad_() if requires_grad and value.requires_grad else moved


def to_cpu(value):
    return value.detach().cpu() if isinstance(value, torch.Tensor) else value


def run(op, sample):
    return sample.output_process_fn_grad(op(sample.input, *sample.args, **sample.kwargs))


def tensors(value):
    return [leaf for leaf in tree_flatten(value)[0] if isinstance(leaf, torch.Tensor)]


def assert_same(actual, expected, dtype, values=True):
    actual = tree_map(to_cpu, actual)
    if not values:
        assert [(t.shape, t.dtype) for t in tensors(actual)] == [
            (t.shape, t.dtype) for t in tensors(expected)]
        return
    torch.testing.assert_close(actual, expected, equal_nan=True, **TOLERANCES[dtype])


def is_random(op, sample):
    name = op_id(op)
    return name in RANDOM_OUTPUTS or (name in RANDOM_SAMPLES and RANDOM_SAMPLES[name](sample))


def gradients(op, sample):
    """Gradients of a fixed weighted sum of the floating outputs, with
    respect to every input that requires them (None where unused)."""
    leaves = [t for t in tensors([sample.input, sample.args, sample.kwargs]) if t.requires_grad]
    outputs = [t for t in tensors(run(op, sample)) if t.requires_grad and t.is_floating_point()]
    if not leaves or not outputs:
        return None
    generator = torch.Generator().manual_seed(0)
    total = sum((out * torch.rand(out.shape, generator=generator).to(out.device)).sum()
                for out in outputs)
    return torch.autograd.grad(total, leaves, allow_unused=True)


# Arguments that stay on the CPU, as on CUDA (the operator reads them on the
# host and refuses device tensors): operator id -> positional index.
HOST_ARGUMENTS = {"tensor_split": 0}


def move(op, sample, grad):
    moved = sample.transform(lambda value: to_neuron(value, grad))
    host = HOST_ARGUMENTS.get(op_id(op))
    if host is not None and host < len(sample.args):
        moved.args = (*moved.args[:host], sample.args[host], *moved.args[host + 1:])
    return moved


def check_sample(op, mode, sample):
    dtype = torch.bfloat16 if mode == "bfloat16" else torch.float32
    grad = mode == "grad"
    moved = move(op, sample, grad)
    try:
        expected = gradients(op, sample) if grad else run(op, sample)
    except Exception as error:  # the CPU refuses: neuron must refuse alike
        with pytest.raises(type(error)):
            gradients(op, moved) if grad else run(op, moved)
        return
    actual = gradients(op, moved) if grad else run(op, moved)
    assert_same(actual, expected, dtype, values=not is_random(op, sample))


def device_is_usable():
    try:
        return (torch.ones(4, device="neuron") * 2).sum().item() == 8.0
    except Exception:  # noqa: BLE001: any failure means it is not
        return False


@pytest.mark.parametrize("op,mode", list(cases()))
def test_matches_cpu(op, mode):
    name = op_id(op)
    expected_reason = EXPECTED_FAILURES.get((name, mode)) or EXPECTED_FAILURES.get((name, "*"))
    dtype = torch.bfloat16 if mode == "bfloat16" else torch.float32
    samples = op.sample_inputs("cpu", dtype, requires_grad=mode == "grad")
    failures = []
    for index, sample in enumerate(samples):
        if index and not ALL_SAMPLES:
            break
        fallbacks = torch_neuronx._C._op_stats()["cpu_fallbacks"]
        torch.manual_seed(index)
        try:
            check_sample(op, mode, sample)
            outcome = Outcome.PASSED
            if torch_neuronx._C._op_stats()["cpu_fallbacks"] != fallbacks:
                outcome = Outcome.FELL_BACK
                failures.append(f"sample {index}: an operator ran on the CPU "
                                f"({sorted(torch_neuronx.get_fallback_ops())[-3:]} ...)")
        except Exception as error:  # noqa: BLE001: recorded, then reported
            outcome = Outcome.FAILED
            failures.append(f"sample {index}: {type(error).__name__}: {str(error)[:400]}")
        if not device_is_usable():
            record(name, mode, Outcome.DEVICE_UNUSABLE, expected_reason)
            pytest.fail(f"{name} {mode} sample {index} left the device unusable")
        record(name, mode, outcome, expected_reason)
    if expected_reason:
        if not failures:
            # Strict over every sample: a declared failure may lie past the
            # first, which is all the fast slice runs.
            if ALL_SAMPLES:
                pytest.fail(f"{name} {mode} is declared to fail ({expected_reason}) but passes: "
                            "remove it from expected_failures.py")
            return
        pytest.xfail(expected_reason)
    assert not failures, "\n".join(failures)

"""The NKI kernel suite (suite.py): every kernel against its NumPy golden
in nki.simulate, on neuron tensors, and inside torch.compile through an
nki_op. NKI_SUITE_SIZE=full (deploy/dev.sh nki) runs the larger shapes."""

import os
import sys

import numpy as np
import pytest
import torch
import torch_neuronx

sys.path.insert(0, os.path.dirname(__file__))

import current_attention  # noqa: E402,F401  (registers its cases)
import current_kernels  # noqa: E402,F401
import legacy_attention  # noqa: E402,F401
import legacy_kernels  # noqa: E402,F401
from suite import CASES, as_float64, check, outputs_of  # noqa: E402

SIZE = os.environ.get("NKI_SUITE_SIZE", "small")


def _inputs(case):
    return case.inputs(np.random.default_rng(abs(hash(case.name)) % (1 << 32)), SIZE)


def _to_torch(array, device):
    kind = array.dtype.name
    if kind == "bfloat16":
        tensor = torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    elif kind in ("float8_e4m3fn", "float8_e5m2"):
        tensor = torch.from_numpy(array.view(np.uint8)).view(getattr(torch, kind))
    else:
        tensor = torch.from_numpy(np.ascontiguousarray(array))
    return tensor.to(device)


def _to_numpy(tensor):
    tensor = tensor.detach().cpu()
    return tensor.double().numpy() if tensor.dtype.is_floating_point else tensor.numpy()


def _golden(case, arrays):
    return case.golden(*(as_float64(a) for a in arrays))


def test_the_suite_has_twenty_kernels_or_more_half_in_each_namespace():
    namespaces = [case.namespace for case in CASES.values()]
    assert len(namespaces) >= 20
    assert namespaces.count("legacy") >= 10 and namespaces.count("current") >= 10


@pytest.mark.parametrize("name", sorted(CASES))
def test_in_nki_simulate(name):
    case = CASES[name]
    arrays = _inputs(case)
    check(case, case.launch(*[a.copy() for a in arrays]), _golden(case, arrays))


@pytest.mark.parametrize("name", sorted(CASES))
def test_on_neuron_tensors(name):
    case = CASES[name]
    arrays = _inputs(case)
    produced = case.launch(*[_to_torch(a, "neuron") for a in arrays])
    for tensor in outputs_of(produced):
        assert tensor.device.type == "neuron"
    check(case, [_to_numpy(t) for t in outputs_of(produced)], _golden(case, arrays))


_OPERATORS = {}


def _operator(case):
    """The case's kernels as an nki_op: a list of tensors in, its outputs out."""
    if case.name not in _OPERATORS:
        def run(args):
            return outputs_of(case.launch(*args))
        _OPERATORS[case.name] = torch_neuronx.nki_op(
            f"nki_suite::{case.name}", run, mutates_args=(),
            schema="(Tensor[] args) -> Tensor[]")
    return _OPERATORS[case.name]


@pytest.mark.parametrize("name", sorted(CASES))
def test_under_torch_compile(name):
    case = CASES[name]
    arrays = _inputs(case)
    operator = _operator(case)
    torch._dynamo.reset()
    compiled = torch.compile(lambda *tensors: operator(list(tensors)), backend="neuron")
    produced = compiled(*[_to_torch(a, "neuron") for a in arrays])
    check(case, [_to_numpy(t) for t in produced], _golden(case, arrays))

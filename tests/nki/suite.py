"""The NKI kernel suite's cases: kernels of the kinds users write, in the
legacy neuronxcc.nki API (legacy_*.py) and the current nki API
(current_*.py), each with inputs and a NumPy golden.

A Case says how to call its kernel (`launch(kernel_inputs, constants)`
returns the kernel's outputs), how to make inputs at a size ("small" for
CI, "full" for `deploy/dev.sh nki`), and its golden. Every case runs three
ways (test_kernel_suite.py): nki.simulate on NumPy arrays, on neuron
tensors, and inside torch.compile(backend="neuron") through an nki_op.
"""

import dataclasses

import numpy as np

CASES = {}


@dataclasses.dataclass
class Case:
    name: str
    namespace: str          # "legacy" or "current"
    # launch(*arrays_or_tensors) -> output or tuple of outputs; constants
    # are bound inside.
    launch: object
    # inputs(rng, size) -> list of NumPy arrays; size is "small" or "full".
    inputs: object
    # golden(*float64 arrays) -> output or tuple of outputs (NumPy).
    golden: object
    rtol: float = 1e-5
    atol: float = 1e-5
    # Outputs compared after casting to float64; None: all.
    compare: tuple = None


def case(name, namespace, inputs, golden, rtol=1e-5, atol=1e-5):
    """Registers the decorated launch function as case `name`."""
    def register(launch):
        CASES[name] = Case(name, namespace, launch, inputs, golden, rtol, atol)
        return launch
    return register


def as_float64(array):
    """A NumPy array (ml_dtypes' bfloat16 and fp8 included) as float64."""
    return np.asarray(array).astype(np.float64)


def outputs_of(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def check(case_, produced, expected):
    produced, expected = outputs_of(produced), outputs_of(expected)
    assert len(produced) == len(expected), f"{case_.name}: {len(produced)} outputs, expected " \
        f"{len(expected)}"
    for index, (got, want) in enumerate(zip(produced, expected)):
        got, want = as_float64(got), as_float64(want)
        assert got.shape == want.shape, f"{case_.name} output {index}: shape {got.shape}, " \
            f"expected {want.shape}"
        np.testing.assert_allclose(got, want, rtol=case_.rtol, atol=case_.atol,
                                   err_msg=f"{case_.name} output {index}")

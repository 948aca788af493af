"""NKI, the Neuron Kernel Interface, on neuron-rtd's NeuronCores.

    import nki, nki.language as nl, nki.isa as nisa

    @nki.jit
    def add_kernel(a, b, out):
        nl.store(out, nl.add(nl.load(a), nl.load(b)))

    add_kernel(a, b, out)                  # neuron tensors: runs on the device
    nki.simulate(add_kernel)(a, b, out)    # CPU tensors or NumPy: runs here

A kernel is traced once per argument signature into a flat list of
nki.isa instructions (loops unrolled, helpers inlined), checked against the
hardware's rules as it is traced, and run by neuron-rtd as an executable on
the core's SBUF and PSUM. docs/nki.md says what is supported.
"""

from nki import collectives, isa, language, typing
from nki._dtypes import DType as dtype
from nki._errors import NkiValidationError
from nki._estimate import Estimate, estimate
from nki._kernel import Kernel, TracedKernel, jit, simulate, simulate_kernel, trace
from nki._tensor import NkiTensor

__all__ = ["Estimate", "Kernel", "NkiTensor", "NkiValidationError", "TracedKernel",
           "collectives", "dtype", "estimate", "isa", "jit", "language", "simulate",
           "simulate_kernel", "trace", "typing"]

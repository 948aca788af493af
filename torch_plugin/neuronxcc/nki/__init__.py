"""neuronxcc.nki: the legacy NKI API (Neuron SDK 2.2x) over the project's
`nki`. Kernels index tiles with nl.arange / nl.mgrid expressions and masks,
mark partition dimensions with nl.par_dim, and call nki.isa instructions
that return their results; nki.jit takes the legacy mode=, and
nki.baremetal / nki.benchmark / nki.profile / nki.simulate_kernel run a
kernel on NumPy arrays."""

import functools

from nki import _kernel
from nki._errors import NkiValidationError, unsupported_api  # noqa: F401
from nki._estimate import estimate  # noqa: F401
from nki._kernel import Kernel, simulate, simulate_kernel  # noqa: F401
from neuronxcc.nki import compiler, isa, language, typing  # noqa: F401
from neuronxcc.nki.typing import tensor  # noqa: F401


def jit(func=None, mode="auto", **options):
    """nki.jit with the legacy API's rules (a kernel may return an nl.hbm
    tensor)."""
    return _kernel.jit(func, mode=mode, legacy=True, **options)


def trace(func=None, *args, **options):
    """The legacy decorator of sub-kernels traced into their callers: as
    jit (a kernel called from a kernel is inlined). With arguments after the
    kernel, this package's nki.trace: the kernel traced for them."""
    if args:
        return _kernel.trace(func, *args, **options)
    return jit(func, **options)


def baremetal(kernel=None, **options):
    """The kernel run on the (simulated) device: NumPy arrays in and out."""
    if kernel is None:
        return functools.partial(baremetal, **options)
    return jit(_function_of(kernel), mode="baremetal", **options)


def benchmark(kernel=None, **options):
    """The kernel run on the device, with `benchmark_result`: the latency
    nki.estimate predicts for trn2 (the simulated device's own time says
    nothing about Trainium)."""
    if kernel is None:
        return functools.partial(benchmark, **options)
    return BenchmarkedKernel(_function_of(kernel), options)


def profile(func=None, **options):
    """The kernel run on the device; the profile (NEFF and NTFF files of
    AWS's profiler) is not produced: see docs/nki.md."""
    if func is None:
        return functools.partial(profile, **options)
    return jit(_function_of(func), mode="profile", **options)


def _function_of(kernel):
    return kernel.function if isinstance(kernel, Kernel) else kernel


class _Latency:
    """nc_latency of a benchmark: every percentile is the prediction."""

    def __init__(self, microseconds):
        self._microseconds = microseconds

    def get_latency_percentile(self, percentile):
        return self._microseconds


class _BenchmarkResult:
    def __init__(self, estimate):
        self.estimate = estimate
        self.nc_latency = _Latency(estimate.total_us)


class BenchmarkedKernel(Kernel):
    def __init__(self, function, options):
        super().__init__(function, mode="benchmark", legacy=True)
        unknown = sorted(set(options) - _kernel._COMPILER_OPTIONS)
        if unknown:
            raise TypeError(f"nki.benchmark got unexpected options {unknown}")
        self.benchmark_result = None

    def __call__(self, *args, **kwargs):
        result = super().__call__(*args, **kwargs)
        fakes = [_kernel.meta_like(a) for a in args]
        self.benchmark_result = _BenchmarkResult(estimate(self)(*fakes, **kwargs))
        return result


FrameworkKernel = unsupported_api("nki.FrameworkKernel", "a framework integration of AWS's "
                                  "compiler; call kernels with torch tensors or NumPy arrays")

"""neuronxcc.nki.language: the legacy nki.language. The same functions as
nki.language, each taking the legacy `mask=` (a compile-time predicate
made of nl.arange / nl.mgrid expressions: the instruction touches only the
elements where it holds); dtypes as NumPy's (ml_dtypes' for bfloat16 and
fp8), comparisons returning bool tiles by default; index expressions
(arange, mgrid), nl.par_dim and the legacy launch-grid helpers."""

import functools
import numbers

import ml_dtypes
import numpy

import nki.language as _current
from nki import _dtypes, _index, _nl_math
from nki._errors import unsupported_api
from nki._nl_memory import par_dim  # noqa: F401
from nki._trace import hbm, psum, sbuf, shared_hbm  # noqa: F401

private_hbm = hbm
arange = _index.arange
mgrid = _index.mgrid

# The legacy API's dtypes are NumPy's.
bool_ = numpy.bool_
int8, int16, int32 = numpy.int8, numpy.int16, numpy.int32
uint8, uint16, uint32 = numpy.uint8, numpy.uint16, numpy.uint32
float16, float32 = numpy.float16, numpy.float32
bfloat16 = numpy.dtype(ml_dtypes.bfloat16)
float8_e4m3 = numpy.dtype(ml_dtypes.float8_e4m3)
float8_e5m2 = numpy.dtype(ml_dtypes.float8_e5m2)
float8_e4m3fn = numpy.dtype(ml_dtypes.float8_e4m3fn)
# tfloat32 runs as float32 here (docs/nki.md).
tfloat32 = numpy.float32
tile_size = _current.tile_size

# Names that are the same in both APIs and take no mask.
from nki.language import (NKIObject, affine_range, ds, dynamic_range, expand_dims,  # noqa: E402
                          is_hbm, is_on_chip, is_psum, is_sbuf, no_reorder, num_programs,
                          program_id, program_ndim, random_seed, sequential_range, static_range)


def _masked(function):
    """`function` with the legacy keyword mask=."""
    @functools.wraps(function)
    def call(*args, mask=None, **kwargs):
        with _index.masked(mask):
            return function(*args, **kwargs)
    return call


def _operator(name, default_dtype=None):
    """The current Operator (usable as op=) with mask= and, for
    comparisons, a bool result by default."""
    current = _nl_math.OPERATORS[name]

    def call(*args, mask=None, dtype=None, **kwargs):
        with _index.masked(mask):
            # An index expression as an operand is its values (nisa.iota).
            args = [_iota_of(a) if _index.is_expression(a) else a for a in args]
            return current(*args, dtype=dtype or default_dtype, **kwargs)

    return _nl_math.Operator(name, call, alu=current.alu, act=current.act)


for _name in _nl_math.OPERATORS:
    globals()[_name] = _operator(_name)
for _name in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
              "logical_and", "logical_or", "logical_xor", "logical_not"):
    globals()[_name] = _operator(_name, default_dtype=bool_)

for _name in ("load", "load_transpose2d", "where", "transpose", "softmax", "mean", "var",
              "rms_norm", "gather_flattened", "dropout", "device_print"):
    globals()[_name] = _masked(getattr(_current, _name))


def store(dst, value, *, mask=None, **kwargs):
    """nl.store; a number fills dst."""
    with _index.masked(mask):
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            value = _current.full(dst.shape if len(dst.shape) > 1 else dst.shape + (1,), value,
                                  dst.dtype)
        _current.store(dst, value)


# What the creation functions take by keyword; the rest (lazy_initialization
# and the like) steer AWS's compiler only.
_CREATION_ARGUMENTS = ("shape", "dtype", "fill_value", "x")


def _creation(name):
    current = getattr(_current, name)

    @functools.wraps(current)
    def create(*args, buffer=None, name="", mask=None, lazy_initialization=None, **kwargs):
        with _index.masked(mask):
            return current(*args, buffer=buffer, name=name, **{
                k: v for k, v in kwargs.items() if k in _CREATION_ARGUMENTS})
    return create


for _name in ("zeros", "ones", "full", "zeros_like", "empty_like"):
    globals()[_name] = _creation(_name)


def _reduction(name):
    current = getattr(_current, name)

    def call(x, axis, *, dtype=None, mask=None, keepdims=False, **kwargs):
        with _index.masked(mask):
            return current(x, axis, dtype=dtype, keepdims=keepdims)

    return _nl_math.Operator(name, call, alu=current.alu)


sum = _reduction("sum")  # noqa: A001
max = _reduction("max")  # noqa: A001
min = _reduction("min")  # noqa: A001
prod = _reduction("prod")


def all(x, axis, *, dtype=bool_, mask=None, **kwargs):  # noqa: A001
    with _index.masked(mask):
        return _current.all(x, axis, dtype=dtype)


def ndarray(shape, dtype, *, buffer=None, name="", **kwargs):
    return _current.ndarray(shape, dtype, buffer=buffer, name=name)


def matmul(x, y, *, transpose_x=False, mask=None, **kwargs):
    with _index.masked(mask):
        return _current.matmul(x, y, transpose_x=transpose_x)


def copy(src, *, mask=None, dtype=None, **kwargs):
    with _index.masked(mask):
        return _current.copy(src, dtype=dtype)


def broadcast_to(src, *, shape, **kwargs):
    return _current.broadcast_to(src, shape)


def static_cast(input_data, dtype):
    """A copy of the tile in `dtype`."""
    return _current.copy(input_data, dtype=dtype)


def rand(shape, dtype=numpy.float32, **kwargs):
    return _current.rand(shape, dtype)


def shared_constant(constant, dtype=None, **kwargs):
    return _current.shared_constant(constant, dtype)


def shared_identity_matrix(n, dtype=numpy.uint8, **kwargs):
    return _current.shared_identity_matrix(n, dtype)


def atomic_rmw(dst, value, op, *, mask=None, **kwargs):
    """dst = op(dst, value) on HBM rows picked by an index tile (an indirect
    dst view): a DMA that adds (nl.add only), rows repeated in the index
    updated once per repeat."""
    from nki import isa as nisa
    with _index.masked(mask):
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            value = _current.full(dst.shape, value, dst.dtype)
        nisa.dma_compute(dst, [dst, value], op)


def finfo(dtype):
    """Machine limits of a floating-point dtype (NumPy's, ml_dtypes' for
    bfloat16 and fp8), a kernel's tensors' dtypes included."""
    return ml_dtypes.finfo(_dtypes.numpy_dtype(dtype))


def _iota_of(expression):
    from neuronxcc.nki import isa
    return isa.iota(expression, float32)


class fp32:
    """float32's limits, as the legacy API names them."""
    min = -3.4028234663852886e38
    max = 3.4028234663852886e38


class bfp16:
    """bfloat16's, likewise (its min is -inf, as AWS's bit pattern 0xff80)."""
    min = float("-inf")
    max = 3.3895313892515355e38


class _GridSize(int):
    """A launch-grid size (nl.nc, nl.spmd_dim): the instances run one after
    another on one core here, whatever cores the grid names."""

    @property
    def grid_size(self):
        return int(self)


def nc(size):
    """A launch-grid dimension spread over `size` NeuronCores."""
    return _GridSize(size)


def spmd_dim(*sizes):
    """A launch-grid dimension of the product of `sizes` (some of them
    nl.nc(...))."""
    total = 1
    for size in sizes:
        total *= int(size)
    return _GridSize(total)


_LEGACY = "a legacy construct of AWS's compiler, removed from NKI"
gemm_grid = unsupported_api("nl.gemm_grid", _LEGACY + " (a matmul tile-grid hint)")
gemm_stationary_grid = unsupported_api("nl.gemm_stationary_grid",
                                       _LEGACY + " (a matmul tile-grid hint)")
all_reduce = unsupported_api("nl.all_reduce", "a reduction across the instances of a launch "
                             "grid, which run one after another here")
loop_reduce = unsupported_api("nl.loop_reduce", _LEGACY + " (write tile += x in the loop)")


del _name

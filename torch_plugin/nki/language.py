"""nki.language: tile-level, NumPy-like functions over nki.isa.

Each function lowers to one or more nki.isa instructions, as AWS documents
them ("convenience wrappers"): nl.load and nl.store are DMAs, elementwise
functions are tensor_tensor, tensor_scalar or activation, reductions are
tensor_reduce, nl.matmul is a transpose and nc_matmul into PSUM. The
functions double as the `op=` operators of nki.isa (nl.add, nl.exp,
nl.maximum, ...). docs/nki.md lists the names that are not supported, each
raising NotImplementedError that names it.
"""

import builtins
import contextlib

from nki import _dtypes, _target, _trace
from nki import _nl_math, _nl_memory
from nki._nl_math import (Operator, all, average, matmul, max, mean, min, operator_of,  # noqa: A004
                          prod, rms_norm, softmax, sum, transpose, var, where)
from nki._nl_memory import (accumulate, assign, broadcast_to, empty_like, expand_dims,
                            full, load, load_transpose2d, ndarray, ndarray_like, ones, par_dim,
                            shared_constant, shared_identity_matrix, store, zeros, zeros_like)
from nki._random import dropout, rand, random_seed
from nki._tensor import NkiTensor
from nki._trace import hbm, psum, sbuf, shared_hbm

globals().update(_nl_math.OPERATORS)

private_hbm = hbm

# dtypes (nl.bool_ is stored as uint8 on chip).
float32 = _dtypes.normalize("float32")
float16 = _dtypes.normalize("float16")
bfloat16 = _dtypes.normalize("bfloat16")
tfloat32 = _dtypes.normalize("tfloat32")
float8_e4m3 = _dtypes.float8_e4m3
float8_e4m3fn = _dtypes.normalize("float8_e4m3fn")
float8_e5m2 = _dtypes.normalize("float8_e5m2")
float8_e8m0fnu = _dtypes.normalize("float8_e8m0fnu")
float8_e5m2_x4 = _dtypes.float8_e5m2_x4
float8_e4m3fn_x4 = _dtypes.float8_e4m3fn_x4
float4_e2m1fn_x4 = _dtypes.float4_e2m1fn_x4
DType = _dtypes.DType
int8 = _dtypes.normalize("int8")
int16 = _dtypes.normalize("int16")
int32 = _dtypes.normalize("int32")
uint8 = _dtypes.normalize("uint8")
uint16 = _dtypes.normalize("uint16")
uint32 = _dtypes.normalize("uint32")
bool_ = _dtypes.normalize("bool")


class MemoryRegion:
    """The memories a tensor lives in (nl.sbuf, nl.psum, nl.hbm,
    nl.private_hbm, nl.shared_hbm)."""
    sbuf = sbuf
    psum = psum
    hbm = hbm
    private_hbm = hbm
    shared_hbm = shared_hbm


class NKIObject:
    """Base class of a kernel's own classes (configuration dataclasses):
    keyword arguments become attributes; instances are compile-time
    constants of a kernel and compare by value. A subclass's plain class
    attributes (`section = None`) are fields too, so that a @dataclass of
    them takes them as keywords, as AWS's NKIObject does."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        annotations = cls.__dict__.get("__annotations__", {})
        plain = [name for name, value in vars(cls).items()
                 if not name.startswith("_") and name not in annotations
                 and not callable(value) and not isinstance(value, (property, staticmethod,
                                                                    classmethod))]
        if plain:
            cls.__annotations__ = {**annotations, **{name: object for name in plain}}

    def __init__(self, **kwargs):
        for name, value in kwargs.items():
            setattr(self, name, value)

    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self):
        return hash((type(self), tuple(sorted((k, _hashable(v)) for k, v in vars(self).items()))))

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


def _hashable(value):
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


class _TileSize:
    """Tile limits of the target (NEURON_PLATFORM_TARGET_OVERRIDE; trn2)."""

    @property
    def pmax(self):
        return _target.current().partitions

    @property
    def psum_fmax(self):
        return _target.current().psum_bank_bytes // 4

    psum_bank_fmax = psum_fmax

    @property
    def gemm_stationary_fmax(self):
        return _target.current().gemm_stationary_fmax

    @property
    def gemm_moving_fmax(self):
        return _target.current().gemm_moving_fmax

    bn_stats_fmax = 512

    @property
    def psum_partition_bytes(self):
        return _target.current().psum_partition_bytes

    @property
    def total_available_sbuf_size(self):
        return _target.current().sbuf_partition_bytes

    @property
    def sbuf_partition_bytes(self):
        return _target.current().sbuf_partition_bytes


tile_size = _TileSize()


def is_hbm(buffer):
    return buffer.space == "hbm"


def is_sbuf(buffer):
    return buffer is sbuf


def is_psum(buffer):
    return buffer is psum


def is_on_chip(buffer):
    return buffer.space != "hbm"


# Loops: the compiler unrolls every one of them; these are Python's range.
def range(*args, **kwargs):  # noqa: A001 - nki.language's name
    return builtins.range(*args)


affine_range = sequential_range = static_range = range


def dynamic_range(*args, **kwargs):
    """A loop the hardware runs at run time; its bounds (numbers, or
    registers known while tracing) are known here, so it unrolls like the
    others (same results)."""
    from nki.isa._registers import known
    return builtins.range(*(known(a, "nl.dynamic_range") for a in args))


def fori_loop(lower, upper, body_fun, step=1):
    """body_fun(i) for i in range(lower, upper, step), unrolled: the bounds
    (numbers, or registers whose values are known while tracing) are."""
    from nki.isa._registers import VirtualRegister, known
    for i in builtins.range(known(lower, "nl.fori_loop"), known(upper, "nl.fori_loop"), step):
        body_fun(VirtualRegister(i))


def while_loop(init, body_fun):
    """r = init; while r: r = body_fun(r), unrolled while the register's
    value is known while tracing."""
    from nki.isa._registers import known
    register = init
    while known(register, "nl.while_loop"):
        register = body_fun(register)
    return register


def ds(start, size):
    """Elements start .. start + size - 1 of a dimension."""
    return slice(start, start + size)


def program_id(axis=0):
    trace = _trace.current()
    return trace.program_id[axis] if axis < len(trace.program_id) else 0


def num_programs(axes=0):
    trace = _trace.current()
    return trace.grid[axes] if axes < len(trace.grid) else 1


def program_ndim():
    return len(_trace.current().grid)


@contextlib.contextmanager
def no_reorder():
    """Keeps the instructions inside in program order: they always are on
    the simulated core (one instruction after another)."""
    yield


def device_print(print_prefix, tensor):
    """Prints the tensor's values when the kernel runs (after the launch,
    from the client): a copy into an HBM tensor of the kernel's."""
    from nki import _print
    _print.device_print(print_prefix, tensor)


def gather_flattened(data, indices, axis=0, dtype=None):
    """out[p, j...] = data[p, indices[p, j...]] over each partition's
    flattened elements (nki.isa.nc_n_gather)."""
    from nki import isa as nisa
    out = ndarray(indices.shape, dtype or data.dtype, sbuf)
    nisa.nc_n_gather(out, data, indices)
    return out


# nl.bool: the spelling nki-library uses for bool_.
globals()["bool"] = bool_

"""nki.language: tile-level, NumPy-like functions over nki.isa.

Each function lowers to one or more nki.isa instructions, as AWS documents
them ("convenience wrappers"): nl.load and nl.store are DMAs, elementwise
functions are tensor_tensor, tensor_scalar or activation, reductions are
tensor_reduce, nl.matmul is a transpose and nc_matmul into PSUM. The
functions double as the `op=` operators of nki.isa (nl.add, nl.exp,
nl.maximum, ...).

Not implemented yet (calling them raises NotImplementedError): masks and
nl.arange/nl.mgrid (removed from current NKI), nl.device_print,
nl.fori_loop, nl.while_loop, nl.dynamic_range, LNC2 collectives.
"""

import builtins
import math

import torch

from nki import _target, _trace, isa as nisa
from nki._trace import NkiTensor, fail, hbm, psum, sbuf, shared_hbm

private_hbm = hbm

# dtypes (nl.bool_ is stored as uint8 on chip).
float32 = torch.float32
float16 = torch.float16
bfloat16 = torch.bfloat16
tfloat32 = torch.float32
float8_e4m3fn = torch.float8_e4m3fn
float8_e5m2 = torch.float8_e5m2
int8 = torch.int8
int16 = torch.int16
int32 = torch.int32
uint8 = torch.uint8
uint16 = torch.uint16
uint32 = torch.uint32
bool_ = torch.uint8


class tile_size:
    """Tile limits of the target (NEURON_PLATFORM_TARGET_OVERRIDE; trn2)."""
    pmax = _target.current().partitions
    psum_fmax = _target.current().psum_bank_bytes // 4
    gemm_stationary_fmax = _target.current().gemm_stationary_fmax
    gemm_moving_fmax = _target.current().gemm_moving_fmax
    bn_stats_fmax = 512
    psum_partition_bytes = _target.current().psum_partition_bytes
    total_available_sbuf_size = _target.current().sbuf_partition_bytes


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


def _check_shape(shape, buffer, dtype, name):
    shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if any(s <= 0 for s in shape):
        fail("err_invalid_shape", f"tensor '{name}' has shape {list(shape)}: sizes are positive")
    if buffer.space == "hbm":
        return shape
    target = _target.current()
    if len(shape) < 2:
        fail("err_invalid_shape", f"an on-chip tensor has a partition and a free dimension; "
             f"'{name}' has shape {list(shape)}")
    if shape[0] > target.partitions:
        fail("err_num_partition_exceed_arch_limit", f"number of partitions {shape[0]} exceed "
             f"architecture limitation of {target.partitions}.")
    element = torch.empty((), dtype=dtype).element_size()
    free_bytes = math.prod(shape[1:]) * element
    if buffer.space == "psum":
        if free_bytes > target.psum_bank_bytes:
            fail("err_psum_tile_exceed_bank", f"a PSUM tile holds at most one 2 KiB bank per "
                 f"partition ({target.psum_bank_bytes // 4} float32); '{name}' "
                 f"{list(shape)} of {dtype} needs {free_bytes} bytes")
    elif free_bytes > target.sbuf_partition_bytes:
        fail("err_out_of_memory", f"SBUF tile '{name}' {list(shape)} needs {free_bytes} bytes per "
             f"partition; a partition has {target.sbuf_partition_bytes}")
    return shape


def ndarray(shape, dtype, buffer=sbuf, name="", address=None):
    """A new tensor in `buffer` (uninitialized). nl.shared_hbm tensors are
    the kernel's outputs when it returns them."""
    if not isinstance(buffer, _trace.Buffer):
        fail("err_invalid_buffer", f"buffer={buffer!r}: use nl.sbuf, nl.psum, nl.hbm or "
             "nl.shared_hbm")
    shape = _check_shape(shape, buffer, dtype, name or "ndarray")
    trace = _trace.current()
    if buffer is shared_hbm:
        allocation = trace.shared_output(shape, dtype, name)
    else:
        allocation = trace.allocate(buffer, dtype, shape, name,
                                    role="scratch" if buffer.space == "hbm" else "")
    if buffer.space == "hbm":
        allocation.elements = math.prod(shape)
        if address is not None:
            fail("err_invalid_address", "address= places SBUF and PSUM tiles, not HBM tensors")
    elif address is not None:
        _place(allocation, address, dtype)
    return NkiTensor(allocation, shape, _trace._contiguous_strides(shape))


def _place(allocation, address, dtype):
    """A tile at `address` = (start partition, byte offset in each
    partition), as the kernel asks."""
    target = _target.current()
    try:
        partition, offset = (int(value) for value in address)
    except (TypeError, ValueError):
        fail("err_invalid_address", f"address={address!r}: give (start partition, byte offset)")
    partitions = allocation.shape[0]
    # Where an engine's access may start (the architecture guide).
    allowed = (0,) if partitions > 64 else (0, 64) if partitions > 32 else (0, 32, 64, 96)
    if partition not in allowed or partition + partitions > target.partitions:
        fail("err_invalid_address", f"a tile of {partitions} partitions starts at partition "
             f"{', '.join(map(str, allowed))}; address={address!r}")
    capacity = target.psum_partition_bytes if allocation.space == "psum" \
        else target.sbuf_partition_bytes
    size = allocation.free_elements * allocation.element_bytes
    element = torch.empty((), dtype=dtype).element_size()
    if offset < 0 or offset % element or offset + size > capacity:
        fail("err_invalid_address", f"{size} bytes per partition at byte {offset} do not fit "
             f"the {capacity} of a {allocation.space.upper()} partition (offsets are multiples of "
             f"the element size)")
    if allocation.space == "psum" and offset % target.psum_bank_bytes:
        fail("err_invalid_address", f"a PSUM tile starts on a {target.psum_bank_bytes}-byte bank "
             f"boundary; address={address!r}")
    allocation.partition_start = partition
    allocation.byte_offset = offset
    allocation.fixed = True


def full(shape, fill_value, dtype, buffer=sbuf, name=""):
    tile = ndarray(shape, dtype, buffer, name)
    nisa.memset(tile, fill_value)
    return tile


def zeros(shape, dtype, buffer=sbuf, name=""):
    return full(shape, 0, dtype, buffer, name)


def ones(shape, dtype, buffer=sbuf, name=""):
    return full(shape, 1, dtype, buffer, name)


def ndarray_like(x, dtype=None, buffer=None, name=""):
    return ndarray(x.shape, dtype or x.dtype, buffer or x.buffer, name)


empty_like = ndarray_like


def zeros_like(x, dtype=None, buffer=None, name=""):
    return zeros(x.shape, dtype or x.dtype, buffer or x.buffer, name)


def _tile_shape(src):
    # A 1-D HBM tensor loads as one partition (our choice; see docs/nki.md).
    return (1,) + src.shape if len(src.shape) == 1 else src.shape


def load(src, dtype=None, name=""):
    """An SBUF tile holding `src` (an HBM tensor), by DMA."""
    nisa._tensor(src, "src", "load")
    if src._allocation.space != "hbm":
        fail("err_unsupported_memory", "Expected operand 'src' of 'load' to be in address space "
             f"'hbm', but got a tile in '{src._allocation.space}' instead.")
    tile = ndarray(_tile_shape(src), dtype or src.dtype, sbuf, name)
    nisa.dma_copy(tile, src)
    return tile


def store(dst, value):
    """Writes tile `value` into HBM tensor `dst`, by DMA (PSUM through SBUF)."""
    nisa._tensor(dst, "dst", "store")
    nisa._tensor(value, "value", "store")
    if dst._allocation.space != "hbm":
        fail("err_unsupported_memory", "Expected operand 'dst' of 'store' to be in address space "
             f"'hbm', but got a tile in '{dst._allocation.space}' instead.")
    if dst.size != value.size:
        fail("err_store_dst_shape_smaller_than_other_shape" if dst.size < value.size
             else "err_shape_mismatch",
             f"store of value{list(value.shape)} into dst{list(dst.shape)}: element counts differ")
    if value._allocation.space == "psum":
        staged = ndarray(value.shape, value.dtype, sbuf)
        nisa.tensor_copy(staged, value)
        value = staged
    nisa.dma_copy(dst, value)


def copy(x, dtype=None):
    """A new SBUF tile with x's values."""
    tile = ndarray(x.shape, dtype or x.dtype, sbuf)
    nisa.tensor_copy(tile, x)
    return tile


class Operator:
    """A function of nki.language that is also an `op=` of nki.isa: `alu` is
    its arithmetic operator's name, `act` its activation function's."""

    def __init__(self, name, implementation, alu=None, act=None):
        self.__name__ = name
        self._implementation = implementation
        self.alu = alu
        self.act = act

    def __call__(self, *args, **kwargs):
        return self._implementation(*args, **kwargs)

    def __repr__(self):
        return f"nl.{self.__name__}"


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _per_partition_shape(tile, other):
    return tile.shape[0] == other.shape[0] and tile.size == tile.shape[0] and other.size != tile.size


def _binary(name):
    def apply(x, y, dtype=None):
        if _is_number(x) and _is_number(y):
            fail("err_invalid_operand", f"nl.{name} takes at least one tile")
        operator = globals()[name]
        if _is_number(y) or _is_number(x):
            tile, number = (x, y) if _is_number(y) else (y, x)
            out = ndarray(tile.shape, dtype or tile.dtype, sbuf)
            nisa.tensor_scalar(out, tile, operator, number, reverse0=_is_number(x))
            return out
        if x.shape == y.shape:
            out = ndarray(x.shape, dtype or torch.promote_types(x.dtype, y.dtype), sbuf)
            nisa.tensor_tensor(out, x, y, operator)
            return out
        if _per_partition_shape(y, x) or _per_partition_shape(x, y):
            tile, column = (x, y) if _per_partition_shape(y, x) else (y, x)
            out = ndarray(tile.shape, dtype or tile.dtype, sbuf)
            nisa.tensor_scalar(out, tile, operator, column, reverse0=column is x)
            return out
        fail("err_shape_mismatch", f"nl.{name} of tiles {list(x.shape)} and {list(y.shape)}: "
             "shapes must be equal, or one of them [P, 1]")
    return apply


def _unary(function):
    def apply(x, dtype=None):
        nisa._tensor(x, "x", function)
        out = ndarray(x.shape, dtype or x.dtype, sbuf)
        nisa.activation(out, globals()[function], x)
        return out
    return apply


for _name, _alu in (("add", "add"), ("subtract", "subtract"), ("multiply", "multiply"),
                    ("divide", "divide"), ("maximum", "maximum"), ("minimum", "minimum"),
                    ("power", "power"), ("equal", "equal"), ("not_equal", "not_equal"),
                    ("greater", "greater"), ("greater_equal", "greater_equal"),
                    ("less", "less"), ("less_equal", "less_equal")):
    globals()[_name] = Operator(_name, _binary(_name), alu=_alu)

for _name, _act in (("exp", "exp"), ("log", "log"), ("sqrt", "sqrt"), ("rsqrt", "rsqrt"),
                    ("reciprocal", "reciprocal"), ("sin", "sin"), ("cos", "cos"),
                    ("tanh", "tanh"), ("sigmoid", "sigmoid"), ("relu", "relu"),
                    ("gelu", "gelu"), ("gelu_apprx_tanh", "gelu_apprx_tanh"), ("silu", "silu"),
                    ("square", "square"), ("sign", "sign"), ("erf", "erf"),
                    ("softplus", "softplus"), ("arctan", "arctan"), ("negative", "negative")):
    globals()[_name] = Operator(_name, _unary(_name), act=_act)

abs = Operator("abs", _unary("abs"), act="abs")  # noqa: A001 - nki.language's name
copy = Operator("copy", copy, act="copy")


def _reduction(name, alu):
    def apply(x, axis, dtype=None, keepdims=False):
        nisa._tensor(x, "x", name)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(sorted({a + x.ndim if a < 0 else a for a in axes}))
        if keepdims:
            shape = tuple(1 if d in axes else s for d, s in enumerate(x.shape))
        else:
            shape = tuple(s for d, s in enumerate(x.shape) if d not in axes)
            if len(shape) < 2:
                shape = (x.shape[0], 1)
        out = ndarray(shape, dtype or x.dtype, sbuf)
        nisa.tensor_reduce(out, globals()[name], x, axes, keepdims=keepdims)
        return out
    return apply


sum = Operator("sum", _reduction("sum", "add"), alu="add")  # noqa: A001
max = Operator("max", _reduction("max", "maximum"), alu="maximum")  # noqa: A001
min = Operator("min", _reduction("min", "minimum"), alu="minimum")  # noqa: A001
prod = Operator("prod", _reduction("prod", "multiply"), alu="multiply")


def mean(x, axis, dtype=None, keepdims=False):
    total = sum(x, axis, dtype=torch.float32, keepdims=keepdims)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    count = math.prod(x.shape[a] for a in axes)
    out = ndarray(total.shape, dtype or x.dtype, sbuf)
    nisa.tensor_scalar(out, total, multiply, 1.0 / count)
    return out


def where(condition, x, y, dtype=None):
    """x where condition is nonzero, else y (tiles of one shape; y may be a
    number): a copy of y, then a predicated copy of x."""
    nisa._on_chip(condition, "condition", "where")
    nisa._on_chip(x, "x", "where")
    out = ndarray(x.shape, dtype or x.dtype, sbuf)
    if _is_number(y):
        nisa.memset(out, y)
    else:
        nisa.tensor_copy(out, y)
    nisa.tensor_copy_predicated(out, x, condition)
    return out


def expand_dims(x, axis):
    """x with a dimension of size 1 inserted at `axis` (a view)."""
    return x.expand_dims(axis)


def broadcast_to(x, shape):
    """x repeated along its dimensions of size 1 to `shape` (a view; on chip,
    the free dimensions only)."""
    return x.broadcast_to(shape)


def _to_sbuf(tile):
    if tile._allocation.space == "sbuf":
        return tile
    staged = ndarray(tile.shape, tile.dtype, sbuf)
    nisa.tensor_copy(staged, tile)
    return staged


def transpose(x, dtype=None):
    """x[P, F]^T as a PSUM tile [F, P] (Tensor engine)."""
    nisa._on_chip(x, "x", "transpose")
    out = ndarray((x.size // x.shape[0], x.shape[0]), dtype or x.dtype, psum)
    nisa.nc_transpose(out, x)
    return out


def matmul(x, y, transpose_x=False):
    """x @ y as a float32 PSUM tile [M, N]: x is [M, K] (or [K, M] with
    transpose_x=True), y is [K, N]; K along the partitions."""
    nisa._on_chip(x, "x", "matmul")
    nisa._on_chip(y, "y", "matmul")
    stationary = _to_sbuf(x if transpose_x else transpose(x))
    moving = _to_sbuf(y)
    out = ndarray((stationary.size // stationary.shape[0], moving.size // moving.shape[0]),
                  float32, psum)
    nisa.nc_matmul(out, stationary, moving)
    return out


def softmax(x, axis, dtype=None):
    """exp(x - max) / sum(exp(x - max)) along the free `axis`, per partition."""
    nisa._on_chip(x, "x", "softmax")
    negated_max = ndarray((x.shape[0], 1), float32, sbuf)
    nisa.tensor_reduce(negated_max, max, x, axis, negate=True, keepdims=True)
    exponentials = ndarray(x.shape, float32, sbuf)
    total = ndarray((x.shape[0], 1), float32, sbuf)
    nisa.activation(exponentials, exp, x, bias=negated_max, reduce_op=add, reduce_res=total)
    inverse = ndarray((x.shape[0], 1), float32, sbuf)
    nisa.reciprocal(inverse, total)
    out = ndarray(x.shape, dtype or x.dtype, sbuf)
    nisa.tensor_scalar(out, exponentials, multiply, inverse)
    return out


def _not_implemented(name):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"nl.{name} is not implemented by this simulator yet "
                                  "(docs/nki.md lists what is)")
    refuse.__name__ = name
    return refuse


for _name in ("device_print", "fori_loop",
              "while_loop", "dynamic_range", "arange", "mgrid", "par_dim"):
    globals()[_name] = _not_implemented(_name)

del _name, _alu, _act

"""nki.language's arithmetic: elementwise functions (tensor_tensor,
tensor_scalar or activation), reductions (tensor_reduce), matmul and
transpose (Tensor engine), softmax and the other composites. Each function
is an Operator, which doubles as an `op=` of nki.isa (nl.add, nl.exp).

Operands broadcast as NumPy's do: a [P, 1] tile is one value per partition
(tensor_scalar), size-1 free dimensions repeat by a view, and a [1, F] tile
meets [P, F] by a partition broadcast (nki.isa copies it to the partitions
first).
"""

import builtins
import math
import numbers

from nki import _dtypes, isa as nisa
from nki._errors import fail
from nki._nl_memory import copy, ndarray
from nki._trace import psum, sbuf

float32 = _dtypes.normalize("float32")


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
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _per_partition(column, tile):
    """Whether `column` holds one value per partition of `tile`."""
    return column.partitions == tile.partitions and column.size == column.partitions and \
        tile.size != column.size and column.partition_dim == 0 and tile.partition_dim == 0


def _broadcast_shape(x, y, name):
    ndim = builtins.max(x.ndim, y.ndim)
    padded = [(1,) * (ndim - t.ndim) + t.shape for t in (x, y)]
    shape = []
    for a, b in zip(*padded):
        if a != b and 1 not in (a, b):
            fail("err_shape_mismatch", f"nl.{name} of tiles {list(x.shape)} and "
                 f"{list(y.shape)}: shapes must be equal or broadcast (sizes of 1)")
        shape.append(builtins.max(a, b))
    return tuple(shape)


def _spread(tile, shape):
    if tile.shape == shape:
        return tile
    if tile.ndim < len(shape):
        tile = tile.reshape((1,) * (len(shape) - tile.ndim) + tile.shape)
    return tile.broadcast_to(shape)


def _binary(name, default_dtype=None):
    def apply(x, y, dtype=None):
        if _is_number(x) and _is_number(y):
            fail("err_invalid_operand", f"nl.{name} takes at least one tile")
        operator = _OPERATORS[name]
        out_dtype = dtype or default_dtype
        if _is_number(y) or _is_number(x):
            tile, number = (x, y) if _is_number(y) else (y, x)
            nisa.check_on_chip(tile, "x", name)
            out = ndarray(tile.shape, out_dtype or tile.dtype, sbuf)
            nisa.tensor_scalar(out, tile, operator, number, reverse0=_is_number(x))
            return out
        nisa.check_on_chip(x, "x", name)
        nisa.check_on_chip(y, "y", name)
        if _per_partition(y, x) or _per_partition(x, y):
            tile, column = (x, y) if _per_partition(y, x) else (y, x)
            out = ndarray(tile.shape, out_dtype or tile.dtype, sbuf)
            nisa.tensor_scalar(out, tile, operator, column, reverse0=column is x)
            return out
        shape = _broadcast_shape(x, y, name)
        if x.buffer is psum and y.buffer is psum:
            y = copy(y)
        out = ndarray(shape, out_dtype or _dtypes.promote(x.dtype, y.dtype), sbuf)
        nisa.tensor_tensor(out, _spread(x, shape), _spread(y, shape), operator)
        return out
    return apply


def _unary(function):
    def apply(x, dtype=None):
        nisa.check_on_chip(x, "x", function)
        out = ndarray(x.shape, dtype or x.dtype, sbuf)
        nisa.activation(out, _OPERATORS[function], x)
        return out
    return apply


def _unary_alu(name, operand=0.0):
    def apply(x, dtype=None):
        nisa.check_on_chip(x, "x", name)
        out = ndarray(x.shape, dtype or x.dtype, sbuf)
        nisa.tensor_scalar(out, x, _OPERATORS[name], operand)
        return out
    return apply


_OPERATORS = {}


def _define(name, implementation, alu=None, act=None):
    operator = Operator(name, implementation, alu=alu, act=act)
    _OPERATORS[name] = operator
    return operator


# Arithmetic, comparisons and logic of the Vector engine's ALU.
for _name in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "abs_max",
              "abs_min", "mod", "fmod"):
    _define(_name, _binary(_name), alu=_name)
for _name in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
              "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
              "bitwise_xor", "left_shift", "right_shift"):
    _define(_name, _binary(_name), alu=_name)
_define("invert", _unary_alu("invert"), alu="invert")
_define("logical_not", _unary_alu("equal"), alu=None)
_define("bypass", _unary_alu("bypass"), alu="bypass")

# Functions of the Scalar engine; a few are also unary ALU operators.
for _name in ("exp", "log", "sqrt", "tanh", "sigmoid", "gelu", "gelu_dx", "gelu_apprx_tanh",
              "gelu_apprx_sigmoid", "gelu_apprx_sigmoid_dx", "silu", "silu_dx", "softplus",
              "mish", "erf", "erf_dx", "sin", "cos", "tan", "arctan", "ceil", "floor", "trunc",
              "negative", "sign", "prelu"):
    _define(_name, _unary(_name), act=_name)
for _name in ("abs", "square", "relu", "rsqrt", "reciprocal"):
    _define(_name, _unary(_name), alu=_name, act=_name)
_define("copy", copy, act="copy")


def _reduction(name, alu):
    def apply(x, axis, dtype=None, keepdims=False):
        nisa.check_on_chip(x, "x", name)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(sorted({a + x.ndim if a < 0 else a for a in axes}))
        if keepdims:
            shape = tuple(1 if d in axes else s for d, s in enumerate(x.shape))
        else:
            shape = tuple(s for d, s in enumerate(x.shape) if d not in axes)
            if len(shape) < 2:
                shape = (x.shape[0], 1)
        out = ndarray(shape, dtype or x.dtype, sbuf)
        nisa.tensor_reduce(out, _OPERATORS[alu], x, axes, keepdims=keepdims)
        return out
    return apply


sum = Operator("sum", _reduction("sum", "add"), alu="add")  # noqa: A001
max = Operator("max", _reduction("max", "maximum"), alu="maximum")  # noqa: A001
min = Operator("min", _reduction("min", "minimum"), alu="minimum")  # noqa: A001
prod = Operator("prod", _reduction("prod", "multiply"), alu="multiply")
average = Operator("average", None, alu="average")


def mean(x, axis, dtype=None, keepdims=False):
    total = sum(x, axis, dtype=float32, keepdims=keepdims)
    count = math.prod(x.shape[a] for a in _axes(x, axis))
    out = ndarray(total.shape, dtype or x.dtype, sbuf)
    nisa.tensor_scalar(out, total, _OPERATORS["multiply"], 1.0 / count)
    return out


def var(x, axis, dtype=None, keepdims=False):
    """The population variance along `axis`: mean((x - mean(x))^2)."""
    centre = mean(x, axis, dtype=float32, keepdims=True)
    deviations = ndarray(x.shape, float32, sbuf)
    if _per_partition(centre, x):
        nisa.tensor_scalar(deviations, x, _OPERATORS["subtract"], centre)
    else:
        nisa.tensor_tensor(deviations, x, _spread(centre, x.shape), _OPERATORS["subtract"])
    squares = ndarray(x.shape, float32, sbuf)
    nisa.activation(squares, _OPERATORS["square"], deviations)
    return mean(squares, axis, dtype=dtype or x.dtype, keepdims=keepdims)


def all(x, axis, dtype=None):  # noqa: A001 - nki.language's name
    """1 where every element along `axis` is nonzero, else 0."""
    nonzero = _OPERATORS["not_equal"](x, 0, dtype=float32)
    return min(nonzero, axis, dtype=dtype or _dtypes.normalize("uint8"))


def _axes(x, axis):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(a + x.ndim if a < 0 else a for a in axes)


def where(condition, x, y, dtype=None):
    """x where condition is nonzero, else y (y may be a number): a copy of
    y, then a predicated copy of x."""
    nisa.check_on_chip(condition, "condition", "where")
    if _is_number(x):
        fail("err_invalid_operand", "nl.where's x is a tile")
    nisa.check_on_chip(x, "x", "where")
    out = ndarray(x.shape, dtype or x.dtype, sbuf)
    if _is_number(y):
        nisa.memset(out, y)
    else:
        nisa.tensor_copy(out, _spread(y, x.shape))
    nisa.tensor_copy_predicated(out, x, _spread(condition, x.shape))
    return out


def _to_sbuf(tile):
    if tile._allocation.space == "sbuf":
        return tile
    staged = ndarray(tile.shape, tile.dtype, sbuf)
    nisa.tensor_copy(staged, tile)
    return staged


def transpose(x, dtype=None):
    """x[P, F]^T as a PSUM tile [F, P] (Tensor engine)."""
    nisa.check_on_chip(x, "x", "transpose")
    out = ndarray((x.size // x.partitions, x.partitions), dtype or x.dtype, psum)
    nisa.nc_transpose(out, x)
    return out


def matmul(x, y, transpose_x=False):
    """x @ y as a float32 PSUM tile [M, N]: x is [M, K] (or [K, M] with
    transpose_x=True), y is [K, N]; K along the partitions."""
    nisa.check_on_chip(x, "x", "matmul")
    nisa.check_on_chip(y, "y", "matmul")
    stationary = _to_sbuf(x if transpose_x else transpose(x))
    moving = _to_sbuf(y)
    out = ndarray((stationary.size // stationary.partitions, moving.size // moving.partitions),
                  float32, psum)
    nisa.nc_matmul(out, stationary, moving)
    return out


def softmax(x, axis=-1, dtype=None):
    """exp(x - max) / sum(exp(x - max)) along the free `axis`, per partition."""
    nisa.check_on_chip(x, "x", "softmax")
    negated_max = ndarray((x.shape[0], 1), float32, sbuf)
    nisa.tensor_reduce(negated_max, max, x, axis, negate=True, keepdims=True)
    exponentials = ndarray(x.shape, float32, sbuf)
    total = ndarray((x.shape[0], 1), float32, sbuf)
    nisa.activation(exponentials, _OPERATORS["exp"], x, bias=negated_max,
                    reduce_op=_OPERATORS["add"], reduce_res=total)
    inverse = ndarray((x.shape[0], 1), float32, sbuf)
    nisa.reciprocal(inverse, total)
    out = ndarray(x.shape, dtype or x.dtype, sbuf)
    nisa.tensor_scalar(out, exponentials, _OPERATORS["multiply"], inverse)
    return out


def rms_norm(x, w, axis, n, epsilon=1e-6, dtype=None, compute_dtype=None):
    """x / sqrt(sum(x^2 along axis) / n + epsilon) * w."""
    nisa.check_on_chip(x, "x", "rms_norm")
    squares = ndarray(x.shape, float32, sbuf)
    total = ndarray((x.shape[0], 1), float32, sbuf)
    nisa.activation(squares, _OPERATORS["square"], x, reduce_op=_OPERATORS["add"],
                    reduce_res=total)
    inverse_rms = ndarray((x.shape[0], 1), float32, sbuf)
    nisa.tensor_scalar(inverse_rms, total, _OPERATORS["multiply"], 1.0 / n,
                       op1=_OPERATORS["add"], operand1=float(epsilon))
    nisa.activation(inverse_rms, _OPERATORS["rsqrt"], inverse_rms)
    normalized = ndarray(x.shape, compute_dtype or float32, sbuf)
    nisa.tensor_scalar(normalized, x, _OPERATORS["multiply"], inverse_rms)
    return _OPERATORS["multiply"](normalized, w, dtype=dtype or x.dtype)


# NumPy's functions as operators (the legacy API took op=np.add).
_NUMPY_NAMES = {"true_divide": "divide", "absolute": "abs", "amax": "max", "amin": "min",
                "remainder": "mod", "arctan": "arctan", "negative": "negative"}


def operator_of(op):
    """The Operator `op` names: one of nki.language's, or a NumPy ufunc or
    reduction of the same name; None for anything else."""
    if isinstance(op, Operator) or hasattr(op, "alu") or hasattr(op, "act"):
        return op
    if type(op).__module__ == "numpy" or getattr(op, "__module__", "") == "numpy":
        name = getattr(op, "__name__", "")
        name = _NUMPY_NAMES.get(name, name)
        return _OPERATORS.get(name) or {"sum": sum, "max": max, "min": min, "prod": prod}.get(name)
    return None


OPERATORS = _OPERATORS
del _name

"""Index expressions of the legacy neuronxcc.nki API: nl.arange and
nl.mgrid, affine expressions of them, and masks made by comparing them.

An expression is const + sum(coeffs[k] * i_k) over the axes of its shape,
with NumPy's broadcasting: nl.arange(128)[:, None] is i_0 over (128, 1),
nl.arange(512)[None, :] is i_1 over (1, 512), and indexing a tensor with
(i_p, k * 512 + i_f) gives the (128, 512) view whose axis k strides by the
sum of each indexed dimension's stride times its coefficient on k. Masks are
compile-time predicates over such a shape, evaluated while tracing; an
instruction under a mask touches only the elements where it holds (a box of
each operand, or one box per row when the mask is not a box).
"""

import contextlib
import threading

import numpy

from nki._errors import fail
from nki._tensor import NkiTensor, PendingBounds


def _broadcast(*shapes):
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    result = []
    for sizes in zip(*padded):
        wider = {s for s in sizes if s != 1}
        if len(wider) > 1:
            fail("err_index_shape_mismatch", f"index expressions of shapes "
                 f"{[list(s) for s in shapes]} do not broadcast")
        result.append(wider.pop() if wider else 1)
    return tuple(result)


class IndexExpr:
    """const + sum(coeffs[k] * i_k), i_k in range(shape[k])."""

    __slots__ = ("shape", "const", "coeffs")
    __hash__ = None

    def __init__(self, shape, const, coeffs):
        self.shape = tuple(shape)
        self.const = int(const)
        self.coeffs = tuple(int(c) for c in coeffs)

    ndim = property(lambda self: len(self.shape))

    def __repr__(self):
        terms = [f"{c}*i{k}" for k, c in enumerate(self.coeffs) if c]
        return f"IndexExpr({' + '.join(terms + [str(self.const)])} over {list(self.shape)})"

    def _padded(self, ndim):
        extra = ndim - self.ndim
        return (1,) * extra + self.shape, (0,) * extra + self.coeffs

    def _combine(self, other, sign):
        if isinstance(other, IndexExpr):
            shape = _broadcast(self.shape, other.shape)
            mine, theirs = self._padded(len(shape))[1], other._padded(len(shape))[1]
            return IndexExpr(shape, self.const + sign * other.const,
                             [a + sign * b for a, b in zip(mine, theirs)])
        if _is_int(other):
            return IndexExpr(self.shape, self.const + sign * int(other), self.coeffs)
        return NotImplemented

    def __add__(self, other):
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other):
        return self._combine(other, -1)

    def __rsub__(self, other):
        return (-self)._combine(other, 1)

    def __neg__(self):
        return IndexExpr(self.shape, -self.const, [-c for c in self.coeffs])

    def __mul__(self, other):
        if _is_int(other):
            return IndexExpr(self.shape, self.const * int(other),
                             [c * int(other) for c in self.coeffs])
        if isinstance(other, IndexExpr):
            fail("err_non_affine_index", "the product of two index expressions is not affine: "
                 "an index is a sum of nl.arange terms times integers")
        return NotImplemented

    __rmul__ = __mul__

    def _non_affine(self, *_):
        fail("err_non_affine_index", "index expressions are affine (sums of nl.arange terms "
             "times integers); //, % and / are not supported")

    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __truediv__ = __rtruediv__ = _non_affine

    def __getitem__(self, key):
        """NumPy's None / ':' / '...' to place the axes, and slices of an axis."""
        if not isinstance(key, tuple):
            key = (key,)
        if Ellipsis in key:
            at = key.index(Ellipsis)
            named = sum(1 for k in key if k is not None and k is not Ellipsis)
            key = key[:at] + (slice(None),) * (self.ndim - named) + key[at + 1:]
        shape, coeffs, const, axis = [], [], self.const, 0
        for item in key:
            if item is None:
                shape.append(1)
                coeffs.append(0)
                continue
            if axis >= self.ndim:
                fail("err_invalid_index", f"too many indices for {self!r}")
            size, coeff = self.shape[axis], self.coeffs[axis]
            if isinstance(item, slice):
                start, stop, step = item.indices(size)
                if step <= 0:
                    fail("err_invalid_index", "slices step forward (step >= 1)")
                const += start * coeff
                shape.append(max(0, (stop - start + step - 1) // step))
                coeffs.append(coeff * step)
            elif _is_int(item):
                const += (int(item) % size) * coeff
            else:
                fail("err_invalid_index", f"index {item!r} of an index expression")
            axis += 1
        shape.extend(self.shape[axis:])
        coeffs.extend(self.coeffs[axis:])
        return IndexExpr(shape, const, coeffs)

    def values(self):
        """The expression's values over its shape, as a NumPy array."""
        result = numpy.full(self.shape, self.const, dtype=numpy.int64)
        for k, (size, coeff) in enumerate(zip(self.shape, self.coeffs)):
            if coeff:
                along = [1] * self.ndim
                along[k] = size
                result = result + coeff * numpy.arange(size).reshape(along)
        return result

    def _compare(self, other, name):
        if not (isinstance(other, IndexExpr) or _is_int(other)):
            return NotImplemented
        difference = self - other
        values = getattr(numpy, name)(difference.values(), 0)
        return Mask(values, affine=[(difference, name)])

    def __lt__(self, other):
        return self._compare(other, "less")

    def __le__(self, other):
        return self._compare(other, "less_equal")

    def __gt__(self, other):
        return self._compare(other, "greater")

    def __ge__(self, other):
        return self._compare(other, "greater_equal")

    def __eq__(self, other):
        return self._compare(other, "equal")

    def __ne__(self, other):
        return self._compare(other, "not_equal")

    def __bool__(self):
        fail("err_unsupported_control_flow", "an index expression has many values: it cannot "
             "drive Python control flow (compare it into a mask=)")


def _is_int(value):
    return isinstance(value, (int, numpy.integer)) and not isinstance(value, bool)


def is_expression(value):
    return isinstance(value, IndexExpr)


def arange(*args):
    """nl.arange(stop) or nl.arange(start, stop): an index over one axis."""
    if len(args) == 1:
        start, stop = 0, args[0]
    elif len(args) == 2:
        start, stop = args
    else:
        fail("err_invalid_index", "nl.arange(stop) or nl.arange(start, stop)")
    start, stop = int(start), int(stop)
    if stop <= start:
        fail("err_invalid_index", f"nl.arange({start}, {stop}) is empty")
    return IndexExpr((stop - start,), start, (1,))


class _Grid(tuple):
    """nl.mgrid's result: the expressions, also as .p (the partition axis)
    and .x, .y, .z (the free axes)."""

    def __getattr__(self, name):
        axes = {"p": 0, "x": 1, "y": 2, "z": 3}
        if name in axes and axes[name] < len(self):
            return self[axes[name]]
        raise AttributeError(name)


class _MGrid:
    """nl.mgrid[0:128, 0:512]: one dense expression per axis, as NumPy's."""

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        ranges = []
        for item in key:
            if not isinstance(item, slice) or item.stop is None:
                fail("err_invalid_index", f"nl.mgrid takes slices start:stop[:step], not {item!r}")
            start = 0 if item.start is None else int(item.start)
            step = 1 if item.step is None else int(item.step)
            ranges.append((start, int(item.stop), step))
        shape = tuple(max(0, (stop - start + step - 1) // step) for start, stop, step in ranges)
        grid = []
        for axis, (start, _, step) in enumerate(ranges):
            coeffs = [0] * len(shape)
            coeffs[axis] = step
            grid.append(IndexExpr(shape, start, coeffs))
        return _Grid(grid)


mgrid = _MGrid()


class Mask:
    """A compile-time predicate over a shape (NumPy booleans); `affine`
    lists it as comparisons with 0 of affine expressions, (expression,
    nl operator name), all of which hold, where it is one (None otherwise)."""

    __hash__ = None

    def __init__(self, values, affine=None):
        self.values = numpy.asarray(values, dtype=bool)
        self.affine = affine

    shape = property(lambda self: self.values.shape)

    def __and__(self, other):
        both = self.affine + other.affine if isinstance(other, Mask) and self.affine and \
            other.affine else None
        return Mask(numpy.logical_and(self.values, _mask_values(other)), both)

    __rand__ = __and__

    def __or__(self, other):
        return Mask(numpy.logical_or(self.values, _mask_values(other)))

    __ror__ = __or__

    def __invert__(self):
        return Mask(~self.values)

    def __bool__(self):
        fail("err_unsupported_control_flow", "a mask combines with '&', not 'and'")


def _mask_values(value):
    if isinstance(value, Mask):
        return value.values
    if isinstance(value, bool):
        return numpy.bool_(value)
    fail("err_invalid_mask", f"mask operand {value!r}: combine comparisons of index expressions")


# -- indexing a tensor with expressions -----------------------------------------

def index_tensor(tensor, index):
    """tensor[index] where the index holds expressions: the strided view of
    the broadcast shape, its bounds checked when an instruction uses it."""
    items = tensor._expand_ellipsis(index)
    tiles = [d for d, item in enumerate(items) if isinstance(item, NkiTensor)]
    if tiles:
        if len(tiles) > 1:
            fail("err_unsupported_indirect_access", f"index of '{tensor.name}' by two tiles")
        from nki import _indirect
        rest = {d: (item if isinstance(item, IndexExpr) else IndexExpr((), int(item), ()))
                for d, item in enumerate(items) if d != tiles[0]}
        if any(isinstance(item, slice) for item in items):
            fail("err_mixed_index", f"index of '{tensor.name}' mixes a slice with an index tile")
        return _indirect.index_rows(tensor, tiles[0], items[tiles[0]], rest)
    expressions = []
    for dim, item in enumerate(items):
        if isinstance(item, IndexExpr):
            expressions.append(item)
        elif _is_int(item):
            position = int(item) + (tensor.shape[dim] if int(item) < 0 else 0)
            expressions.append(IndexExpr((), position, ()))
        elif isinstance(item, slice):
            fail("err_mixed_index", f"index of '{tensor.name}' mixes a slice with index "
                 "expressions: index every dimension with nl.arange expressions or integers")
        else:
            fail("err_invalid_index", f"index {item!r} of tensor '{tensor.name}'")
    shape = _broadcast(*(e.shape for e in expressions))
    ndim = len(shape)
    strides, offset, pending = [0] * ndim, tensor.offset, []
    for dim, expression in enumerate(expressions):
        _, coeffs = expression._padded(ndim)
        offset += expression.const * tensor.strides[dim]
        for axis, coeff in enumerate(coeffs):
            strides[axis] += coeff * tensor.strides[dim]
        pending.append((dim, tensor.shape[dim], expression.const, coeffs))
    partition_dim = None
    if tensor.partition_dim is not None:
        _, partition_coeffs = expressions[tensor.partition_dim]._padded(ndim)
        moving = [axis for axis, coeff in enumerate(partition_coeffs) if coeff]
        if len(moving) > 1:
            fail("err_invalid_partition_index", f"the partition index of '{tensor.name}' moves "
                 "along several axes")
        if moving:
            partition_dim = moving[0]
            for dim, expression in enumerate(expressions):
                if dim != tensor.partition_dim and expression._padded(ndim)[1][partition_dim]:
                    fail("err_invalid_partition_index", f"an axis of the index of "
                         f"'{tensor.name}' walks both its partitions and a free dimension")
        elif shape and shape[0] == 1:
            partition_dim = 0
        else:
            shape, strides, partition_dim = (1,) + shape, [0] + strides, 0
            pending = [(dim, size, const, (0,) + tuple(coeffs))
                       for dim, size, const, coeffs in pending]
    return NkiTensor(tensor._allocation, shape, strides, offset, partition_dim or 0,
                     PendingBounds(tensor.name, pending))


# -- masks on instructions ---------------------------------------------------------

_local = threading.local()


@contextlib.contextmanager
def masked(mask):
    """Instructions traced inside run under `mask` (None: no mask)."""
    if mask is not None and not isinstance(mask, Mask):
        if isinstance(mask, bool):
            mask = Mask(numpy.bool_(mask))
        else:
            fail("err_invalid_mask", f"mask={mask!r}: a comparison of index expressions")
    previous = getattr(_local, "mask", None)
    _local.mask = mask
    try:
        yield
    finally:
        _local.mask = previous


def active_mask():
    return getattr(_local, "mask", None)


def boxes(mask):
    """The boxes ((low, high) per axis, inclusive) that together are the
    mask's true elements: one box when the mask is one, else one per
    index of its first axis. Fails for masks no row split makes boxes of."""
    values = mask.values
    if values.ndim == 0:
        return [()] if values else []
    whole = _box_of(values)
    if whole is not None:
        return [whole] if whole != "empty" else []
    found = []
    for row in range(values.shape[0]):
        box = _box_of(values[row])
        if box is None:
            fail("err_unsupported_mask", "a mask that is not a box in any row of its first axis "
                 "(give one predicate per axis, combined with '&')")
        if box != "empty":
            found.append(((row, row),) + box)
    return found


def _box_of(values):
    if not values.any():
        return "empty"
    box = []
    for axis in range(values.ndim):
        others = tuple(a for a in range(values.ndim) if a != axis)
        present = numpy.nonzero(values.any(axis=others) if others else values)[0]
        box.append((int(present[0]), int(present[-1])))
    inside = values[tuple(slice(low, high + 1) for low, high in box)]
    return tuple(box) if inside.all() else None

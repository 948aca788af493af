"""NkiTensor: what a kernel holds while it is traced, a strided view of one
allocation (an HBM tensor, or a tile in SBUF or PSUM) in the allocation's
element coordinates.

A tile's element (p, f) is p * free_elements + f: its partitions are rows of
`free_elements`. A view may walk the partitions along any of its dimensions
(`partition_dim`: a block dimension of nl.par_dim may come first), but the
engines see partitions first; `compute_view` gives that order. Views made by
index expressions (nl.arange, nl.mgrid) keep their bounds check until an
instruction uses them, so that a mask can exclude elements past the edge.
"""

import math

import torch

from nki import _dtypes
from nki._errors import fail


def contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


class PendingBounds:
    """The index expression of each dimension of the viewed tensor, checked
    against its size when an instruction uses the view (after its mask):
    dimension `dim` of `size` reads const + sum(coeffs[k] * i_k)."""

    def __init__(self, name, dims):
        self.name = name
        self.dims = dims  # [(dim, size, const, coeffs)]

    def check(self, box):
        """box: (low, high) per axis of the view, inclusive."""
        for dim, size, const, coeffs in self.dims:
            low = high = const
            for coeff, (first, last) in zip(coeffs, box):
                low += min(coeff * first, coeff * last)
                high += max(coeff * first, coeff * last)
            if low < 0 or high >= size:
                fail("err_tensor_access_out_of_bound",
                     f"Out-of-bound access for tensor `{self.name}` on dimension {dim}: index "
                     f"range [{low}, {high}] exceed dimension size of {size}")


class NkiTensor:
    """A tensor of a kernel being traced."""

    def __init__(self, allocation, shape, strides, offset=0, partition_dim=0, pending=None):
        self._allocation = allocation
        self.shape = tuple(int(s) for s in shape)
        self.strides = tuple(int(s) for s in strides)
        self.offset = int(offset)
        # Which dimension walks a tile's partitions (None for HBM).
        self.partition_dim = partition_dim if allocation.on_chip else None
        self._pending = pending
        # Offsets read from a tile at run time (nki._indirect), or None.
        self._indirect = None

    dtype = property(lambda self: _dtypes.DType(self._allocation.dtype))
    buffer = property(lambda self: self._allocation.buffer)
    name = property(lambda self: self._allocation.name)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    @property
    def partitions(self):
        """How many partitions the view covers (1 for HBM)."""
        return self.shape[self.partition_dim] if self.partition_dim is not None else 1

    def __repr__(self):
        return (f"NkiTensor({self.name!r}, shape={list(self.shape)}, dtype="
                f"{_dtypes.name(self.dtype)}, buffer={self.buffer})")

    def __len__(self):
        return self.shape[0]

    def __bool__(self):
        # An HBM tensor is there (`if bias:` of an optional argument); a
        # tile's values are known only when the kernel runs.
        if not self._allocation.on_chip:
            return True
        fail("err_unsupported_control_flow",
             "a tile's value is known only when the kernel runs: it cannot drive Python "
             "control flow")

    def __iter__(self):
        fail("err_unsupported_control_flow", f"tensor '{self.name}' cannot be iterated: index it "
             "with integers, slices or nl.ds")

    def _derive(self, shape, strides, offset, partition_dim=None):
        """A view of the same allocation (checks any bound a mask could
        have excused first: a derived view keeps no pending check)."""
        self._refuse_if_indirect()
        self.check_bounds()
        if partition_dim is None:
            partition_dim = self.partition_dim or 0
        return NkiTensor(self._allocation, shape, strides, offset, partition_dim)

    def _refuse_if_indirect(self):
        if self._indirect is not None:
            fail("err_unsupported_indirect_access", f"a view of indirect view '{self.name}': "
                 "index the tensor first, then make the view indirect")

    def check_bounds(self, box=None):
        if self._pending is not None:
            self._pending.check(box or [(0, size - 1) for size in self.shape])

    def with_box(self, box):
        """The view restricted to box ((low, high) per dimension, inclusive),
        its pending bounds checked over that box."""
        if self._indirect is not None and any(
                (low, high) != (0, size - 1) for (low, high), size in zip(box, self.shape)):
            fail("err_unsupported_indirect_access", f"a mask over indirect view '{self.name}'")
        if self._indirect is not None:
            return self
        self.check_bounds(box)
        offset = self.offset + sum(low * stride for (low, _), stride in zip(box, self.strides))
        shape = [high - low + 1 for low, high in box]
        return NkiTensor(self._allocation, shape, self.strides, offset, self.partition_dim or 0)

    # -- indexing ------------------------------------------------------------

    def __getitem__(self, index):
        from nki import _index
        if not isinstance(index, tuple):
            index = (index,)
        self._refuse_if_indirect()
        if any(_index.is_expression(item) or isinstance(item, NkiTensor) for item in index):
            return _index.index_tensor(self, index)
        self.check_bounds()
        index = self._expand_ellipsis(index)
        shape, strides, offset = [], [], self.offset
        partition_dim = None
        for dim, (item, size, stride) in enumerate(zip(index, self.shape, self.strides)):
            walks_partitions = dim == self.partition_dim
            if isinstance(item, slice):
                start, stop, step = self._slice_bounds(item, size, dim)
                offset += start * stride
                if walks_partitions:
                    partition_dim = len(shape)
                shape.append(max(0, (stop - start + step - 1) // step))
                strides.append(stride * step)
            elif isinstance(item, (int, torch.SymInt)) and not isinstance(item, bool):
                position = int(item)
                if position < 0:
                    position += size
                if not 0 <= position < size:
                    fail("err_tensor_access_out_of_bound",
                         f"Out-of-bound access for tensor `{self.name}` on dimension {dim}: "
                         f"index {int(item)} exceed dimension size of {size}")
                offset += position * stride
                if walks_partitions:
                    # The partition dimension stays, at size 1.
                    partition_dim = len(shape)
                    shape.append(1)
                    strides.append(stride)
            else:
                fail("err_invalid_index",
                     f"index {item!r} of tensor '{self.name}': use integers, slices, nl.ds or "
                     "index expressions (nl.arange, nl.mgrid)")
        return self._finish_view(shape, strides, offset, partition_dim)

    def _expand_ellipsis(self, index):
        if sum(1 for i in index if i is Ellipsis) > 1:
            fail("err_invalid_index", "an index may hold one '...'")
        if Ellipsis in index:
            at = index.index(Ellipsis)
            fill = len(self.shape) - (len(index) - 1)
            index = index[:at] + (slice(None),) * fill + index[at + 1:]
        if len(index) > len(self.shape):
            fail("err_invalid_index", f"{len(index)} indices for tensor '{self.name}' of "
                 f"{len(self.shape)} dimensions")
        return index + (slice(None),) * (len(self.shape) - len(index))

    def _slice_bounds(self, item, size, dim):
        start = 0 if item.start is None else int(item.start)
        stop = size if item.stop is None else int(item.stop)
        step = 1 if item.step is None else int(item.step)
        if step <= 0:
            fail("err_invalid_index", "slices step forward (step >= 1)")
        if start < 0 or stop > size or start > stop:
            fail("err_tensor_access_out_of_bound",
                 f"Out-of-bound access for tensor `{self.name}` on dimension {dim}: "
                 f"index range [{start}, {stop - 1}] exceed dimension size of {size}")
        return start, stop, step

    def _finish_view(self, shape, strides, offset, partition_dim, pending=None):
        if self._allocation.on_chip:
            # A tile keeps a partition and a free dimension.
            if partition_dim is None:
                shape, strides, partition_dim = [1] + shape, [0] + strides, 0
            if len(shape) < 2:
                shape, strides = shape + [1], strides + [1]
        elif not shape:
            shape, strides = [1], [1]
        return NkiTensor(self._allocation, shape, strides, offset, partition_dim or 0, pending)

    def __setitem__(self, index, value):
        from nki import language
        language.assign(self[index], value)

    # -- views ---------------------------------------------------------------

    def is_contiguous(self):
        expected = contiguous_strides(self.shape)
        return all(size == 1 or stride == want
                   for size, stride, want in zip(self.shape, self.strides, expected))

    def get_pattern(self):
        return [[stride, size] for stride, size in zip(self.strides, self.shape)]

    def is_indirect(self):
        return self._indirect is not None

    def reshape(self, shape):
        shape = _resolve_shape(shape, self.size, self.name)
        if self._allocation.on_chip:
            if shape[0] != self.partitions:
                fail("err_invalid_reshape", "a tile's reshape keeps its partition dimension "
                     f"({self.partitions}); got {list(shape)}")
            free = self.compute_view()
            inner = NkiTensor(free._allocation, free.shape[1:], free.strides[1:], 0)
            if not inner.is_contiguous():
                fail("err_invalid_reshape", "only a tile whose free dimensions are contiguous "
                     "can be reshaped")
            return self._derive(shape, (free.strides[0],) + contiguous_strides(shape[1:]),
                                self.offset, 0)
        if not self.is_contiguous():
            fail("err_invalid_reshape", f"only a contiguous view of '{self.name}' can be "
                 "reshaped")
        return self._derive(shape, contiguous_strides(shape), self.offset)

    def expand_dims(self, axis):
        """A view with a dimension of size 1 inserted at `axis` (not before a
        tile's partition dimension)."""
        axis = axis + self.ndim + 1 if axis < 0 else axis
        if not 0 <= axis <= self.ndim or (self._allocation.on_chip and
                                          axis <= self.partition_dim):
            fail("err_invalid_index", f"expand_dims at {axis} of '{self.name}' "
                 f"{list(self.shape)}: a tile's partition dimension stays first")
        stride = self.strides[axis] * self.shape[axis] if axis < self.ndim else 1
        partition_dim = self.partition_dim
        return self._derive(self.shape[:axis] + (1,) + self.shape[axis:],
                            self.strides[:axis] + (stride,) + self.strides[axis:], self.offset,
                            partition_dim)

    expand_dim = expand_dims

    def squeeze_dim(self, dim):
        dim = dim + self.ndim if dim < 0 else dim
        if self.shape[dim] != 1 or (self._allocation.on_chip and dim == self.partition_dim):
            fail("err_invalid_index", f"squeeze_dim({dim}) of '{self.name}' {list(self.shape)}: "
                 "the dimension must be of size 1 and not a tile's partitions")
        partition_dim = self.partition_dim
        if partition_dim is not None and partition_dim > dim:
            partition_dim -= 1
        return self._derive(self.shape[:dim] + self.shape[dim + 1:],
                            self.strides[:dim] + self.strides[dim + 1:], self.offset,
                            partition_dim)

    def reshape_dim(self, dim, shape):
        dim = dim + self.ndim if dim < 0 else dim
        shape = _resolve_shape(shape, self.shape[dim], self.name)
        if self._allocation.on_chip and dim == self.partition_dim and len(shape) > 1:
            fail("err_invalid_reshape", f"reshape_dim of '{self.name}': a tile's partition "
                 "dimension is not split")
        inner = contiguous_strides(shape)
        strides = tuple(s * self.strides[dim] for s in inner)
        partition_dim = self.partition_dim
        if partition_dim is not None and partition_dim > dim:
            partition_dim += len(shape) - 1
        return self._derive(self.shape[:dim] + shape + self.shape[dim + 1:],
                            self.strides[:dim] + strides + self.strides[dim + 1:], self.offset,
                            partition_dim)

    def flatten_dims(self, start_dim, end_dim):
        start_dim = start_dim + self.ndim if start_dim < 0 else start_dim
        end_dim = end_dim + self.ndim if end_dim < 0 else end_dim
        if self._allocation.on_chip and start_dim <= self.partition_dim <= end_dim and \
                start_dim != end_dim:
            fail("err_invalid_reshape", f"flatten_dims of '{self.name}': a tile's partition "
                 "dimension is not merged")
        for k in range(start_dim, end_dim):
            if self.strides[k] != self.strides[k + 1] * self.shape[k + 1]:
                fail("err_invalid_reshape", f"flatten_dims({start_dim}, {end_dim}) of "
                     f"'{self.name}': the dimensions are not contiguous")
        size = math.prod(self.shape[start_dim:end_dim + 1])
        partition_dim = self.partition_dim
        if partition_dim is not None and partition_dim > end_dim:
            partition_dim -= end_dim - start_dim
        return self._derive(self.shape[:start_dim] + (size,) + self.shape[end_dim + 1:],
                            self.strides[:start_dim] + (self.strides[end_dim],) +
                            self.strides[end_dim + 1:], self.offset, partition_dim)

    def permute(self, dims):
        dims = tuple(d + self.ndim if d < 0 else d for d in dims)
        if sorted(dims) != list(range(self.ndim)):
            fail("err_invalid_index", f"permute{dims} of '{self.name}' {list(self.shape)}: "
                 "give each dimension once")
        partition_dim = dims.index(self.partition_dim) if self.partition_dim is not None \
            else None
        return self._derive(tuple(self.shape[d] for d in dims),
                            tuple(self.strides[d] for d in dims), self.offset, partition_dim)

    def slice(self, dim, start, end, step=1):
        index = [slice(None)] * self.ndim
        index[dim] = slice(start, end, step)
        return self[tuple(index)]

    def select(self, dim, index):
        if isinstance(index, NkiTensor):
            from nki import _indirect
            return _indirect.select(self, dim + self.ndim if dim < 0 else dim, index)
        view = [slice(None)] * self.ndim
        view[dim] = index
        return self[tuple(view)]

    def vector_select(self, dim, vector_offset):
        from nki import _indirect
        return _indirect.vector_select(self, dim + self.ndim if dim < 0 else dim, vector_offset)

    def indirect(self, index, num_elem=None):
        fail("err_unsupported_indirect_access", f"indirect of '{self.name}': the offsets are "
             "read at run time, which this simulator does not support (docs/nki.md)")

    def rearrange(self, src_pattern, dst_pattern, fixed_sizes=None):
        """Split, reorder and merge dimensions by einops-style patterns: a
        tuple of names per dimension, a nested tuple for a split or merged
        one (`(('b', ('h', 'w')), ('b', 'w', 'h'), {'h': 4})`)."""
        sizes = dict(fixed_sizes or {})
        flat_names, split = [], self
        offset = 0
        for dim, entry in enumerate(src_pattern):
            group = entry if isinstance(entry, tuple) else (entry,)
            known = [sizes.get(n) for n in group]
            size = self.shape[dim]
            if None in known:
                missing = [n for n in group if n not in sizes]
                if len(missing) > 1:
                    fail("err_invalid_reshape", f"rearrange: give the sizes of {missing[1:]}")
                sizes[missing[0]] = size // math.prod(s for s in known if s is not None)
            parts = tuple(sizes[n] for n in group)
            split = split.reshape_dim(dim + offset, parts) if len(group) > 1 else split
            offset += len(group) - 1
            flat_names.extend(group)
        order = []
        for entry in dst_pattern:
            order.extend(entry if isinstance(entry, tuple) else (entry,))
        if sorted(order) != sorted(flat_names):
            fail("err_invalid_reshape", f"rearrange {src_pattern} -> {dst_pattern}: the "
                 "patterns name different dimensions")
        moved = split.permute(tuple(flat_names.index(n) for n in order))
        position = 0
        for entry in dst_pattern:
            if isinstance(entry, tuple) and len(entry) > 1:
                moved = moved.flatten_dims(position, position + len(entry) - 1)
            position += 1
        return moved

    def broadcast(self, dim, size):
        shape = list(self.shape)
        shape[dim] = size
        return self.broadcast_to(shape)

    def broadcast_to(self, shape):
        """A view repeating dimensions of size 1 to `shape` (stride 0). A
        tile's partition dimension repeated this way is read as it is by DMA
        only; nki.language's functions copy it to the partitions first."""
        shape = tuple(int(s) for s in shape)
        if len(shape) != self.ndim:
            fail("err_shape_mismatch", f"broadcast_to {list(shape)} of '{self.name}' "
                 f"{list(self.shape)}: the same number of dimensions")
        strides = []
        for dim, (have, want, stride) in enumerate(zip(self.shape, shape, self.strides)):
            if have == want:
                strides.append(stride)
            elif have == 1:
                strides.append(0)
            else:
                fail("err_shape_mismatch", f"cannot broadcast '{self.name}' {list(self.shape)} "
                     f"to {list(shape)} (dimension {dim})")
        return self._derive(shape, strides, self.offset)

    def ap(self, pattern, offset=None, scalar_offset=None, vector_offset=None, indirect_dim=0,
           dtype=None):
        """An explicit access pattern [[stride, count], ...] over the
        allocation's elements (as torch.as_strided), from this view's offset
        plus `offset`."""
        view = self if dtype is None else self.view(dtype)
        try:
            pairs = [(int(stride), int(count)) for stride, count in pattern]
        except (TypeError, ValueError):
            fail("err_invalid_access_pattern", f"pattern {pattern!r}: [[stride, count], ...]")
        if not pairs or any(count < 1 for _, count in pairs):
            fail("err_invalid_access_pattern", f"pattern {pattern!r}: counts are positive")
        start = view.offset + (int(offset) if offset is not None else 0)
        if scalar_offset is not None or vector_offset is not None:
            from nki import _indirect
            from nki.isa._registers import VirtualRegister
            if isinstance(scalar_offset, VirtualRegister):
                # A register known while tracing moves the view now.
                from nki.isa._registers import known
                start += known(scalar_offset, ".ap(scalar_offset=)") * \
                    math.prod(view.shape[indirect_dim + 1:])
            else:
                return _indirect.with_pattern(view, pairs, start, scalar_offset, vector_offset,
                                              indirect_dim)
        result = NkiTensor(view._allocation, [c for _, c in pairs], [s for s, _ in pairs],
                           start, 0)
        result.check_storage()
        return result

    def view(self, dtype):
        """The same bytes as another dtype of the same size."""
        dtype = _dtypes.normalize(dtype)
        if _dtypes.itemsize(dtype) != _dtypes.itemsize(self.dtype):
            fail("err_unsupported_dtype", f"view of '{self.name}' ({_dtypes.name(self.dtype)}) as "
                 f"{_dtypes.name(dtype)}: element sizes differ")
        if dtype == self.dtype:
            return self
        from nki import _trace
        alias = _trace.current().alias(self._allocation, dtype)
        return NkiTensor(alias, self.shape, self.strides, self.offset, self.partition_dim or 0,
                         self._pending)

    reinterpret_cast = view

    def check_storage(self):
        """Fails unless every element of the view lies inside its allocation
        (a tile's: inside its partitions and each partition's elements)."""
        allocation = self._allocation
        low = high = self.offset
        for size, stride in zip(self.shape, self.strides):
            span = (size - 1) * stride
            low, high = (low + span, high) if span < 0 else (low, high + span)
        if not allocation.on_chip:
            if low < 0 or high >= allocation.elements:
                fail("err_tensor_access_out_of_bound", f"access [{low}, {high}] of tensor "
                     f"'{self.name}' of {allocation.elements} elements")
            return
        free = allocation.free_elements
        if low < 0 or high // free >= allocation.shape[0]:
            fail("err_tensor_access_out_of_bound", f"access of tile '{self.name}' outside its "
                 f"{allocation.shape[0]} partitions")

    def compute_view(self):
        """The view as an engine walks it: partitions first."""
        if self.partition_dim in (None, 0):
            return self
        order = [self.partition_dim] + [d for d in range(self.ndim) if d != self.partition_dim]
        return NkiTensor(self._allocation, [self.shape[d] for d in order],
                         [self.strides[d] for d in order], self.offset, 0, self._pending)

    def access(self):
        """(allocation index, offset, [(stride, count)]) for the plan, and
        the indirect part (index access, dim or -1, stride) if any."""
        dims = [(stride, size) for stride, size in zip(self.strides, self.shape)]
        if self._indirect is not None:
            return (self._allocation.index, self.offset, dims, self._indirect.describe())
        return (self._allocation.index, self.offset, dims)

    # -- arithmetic as sugar for nki.language's functions ---------------------

    def _language(self):
        from nki import language
        return language

    def __add__(self, other):
        return self._language().add(self, other)

    def __radd__(self, other):
        return self._language().add(other, self)

    def __sub__(self, other):
        return self._language().subtract(self, other)

    def __rsub__(self, other):
        return self._language().subtract(other, self)

    def __mul__(self, other):
        return self._language().multiply(self, other)

    def __rmul__(self, other):
        return self._language().multiply(other, self)

    def __truediv__(self, other):
        return self._language().divide(self, other)

    def __rtruediv__(self, other):
        return self._language().divide(other, self)

    def __pow__(self, other):
        return self._language().power(self, other)

    def __neg__(self):
        return self._language().negative(self)

    def __and__(self, other):
        return self._language().bitwise_and(self, other)

    def __or__(self, other):
        return self._language().bitwise_or(self, other)

    def __xor__(self, other):
        return self._language().bitwise_xor(self, other)

    def __invert__(self):
        return self._language().invert(self)

    def __lshift__(self, other):
        return self._language().left_shift(self, other)

    def __rshift__(self, other):
        return self._language().right_shift(self, other)

    def __lt__(self, other):
        return self._language().less(self, other)

    def __le__(self, other):
        return self._language().less_equal(self, other)

    def __gt__(self, other):
        return self._language().greater(self, other)

    def __ge__(self, other):
        return self._language().greater_equal(self, other)

    def __iadd__(self, other):
        return self._language().accumulate(self, other, "add")

    def __isub__(self, other):
        return self._language().accumulate(self, other, "subtract")

    def __imul__(self, other):
        return self._language().accumulate(self, other, "multiply")

    def __itruediv__(self, other):
        return self._language().accumulate(self, other, "divide")


def _resolve_shape(shape, size, name):
    shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if shape.count(-1) > 1:
        fail("err_invalid_reshape", f"reshape of '{name}' to {list(shape)}: at most one -1")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or size % known:
            fail("err_invalid_reshape", f"cannot reshape '{name}' of {size} elements to "
                 f"{list(shape)}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    if math.prod(shape) != size:
        fail("err_invalid_reshape", f"cannot reshape '{name}' of {size} elements to "
             f"{list(shape)}: element counts differ")
    return shape

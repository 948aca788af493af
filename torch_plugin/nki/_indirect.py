"""Indirect (dynamic) addressing of HBM tensors: views whose offsets a DMA
reads from a tile when it runs (gathers and scatters of rows).

- `t.ap(pattern, vector_offset=idx)`: element (w, ...) of the view is row
  idx[w] of `t` (the stride of t's indirect_dim per index), the rest as the
  pattern says;
- `t.ap(pattern, scalar_offset=tile)`, `t.select(dim, tile)`: the whole view
  moved by the tile's one value times the stride of that dimension;
- `t.vector_select(dim, idx)`: partition w reads index idx[w] of `dim`;
- the legacy `t[idx_tile[i_p, 0], i_f]`: as vector_offset along t's first
  dimension.

Only a DMA (dma_copy, nl.load, nl.store, dma_compute) reads or writes such a
view; the daemon checks each offset against the tensor when it runs."""

import math

from nki import _dtypes
from nki._errors import fail


class Indirect:
    """Offsets read at run time: `index` (an on-chip tile of integers) times
    `stride` elements, added along dimension `dim` of the view (its index
    i_dim picks index[i_dim]), or to the whole view when `dim` is None."""

    def __init__(self, index, dim, stride):
        self.index = index
        self.dim = dim
        self.stride = int(stride)

    def describe(self):
        """What the plan carries: (index access, dim or -1, stride)."""
        return (self.index.access(), -1 if self.dim is None else self.dim, self.stride)


def _index_tile(index, what, rows=None):
    from nki._tensor import NkiTensor
    if not isinstance(index, NkiTensor) or not index._allocation.on_chip:
        fail("err_unsupported_indirect_access", f"{what} is a tile of indices in SBUF")
    if _dtypes.is_float(index.dtype):
        fail("err_unsupported_dtype", f"{what} holds integer indices, not "
             f"{_dtypes.name(index.dtype)}")
    view = index.compute_view()
    if rows is not None and (view.shape[0] != rows or view.size != rows):
        fail("err_shape_mismatch", f"{what} has one index per row: [{rows}, 1], not "
             f"{list(view.shape)}")
    if rows is None and view.size != 1:
        fail("err_shape_mismatch", f"{what} holds one index ([1, 1]), not {list(view.shape)}")
    return view


def _base(tensor, what):
    if tensor._allocation.on_chip:
        fail("err_unsupported_indirect_access", f"{what} of tile '{tensor.name}': indirect "
             "addressing reads HBM tensors (by DMA)")
    if tensor._indirect is not None:
        fail("err_unsupported_indirect_access", f"{what} of '{tensor.name}': a view already "
             "indirect cannot be made indirect again")


def _derived(tensor, shape, strides, offset, indirect):
    from nki._tensor import NkiTensor
    view = NkiTensor(tensor._allocation, shape, strides, offset)
    view._indirect = indirect
    return view


def with_pattern(tensor, pairs, start, scalar_offset, vector_offset, indirect_dim):
    """tensor.ap(pattern, offset, scalar_offset=, vector_offset=)."""
    _base(tensor, ".ap()")
    if not 0 <= indirect_dim < tensor.ndim:
        fail("err_invalid_index", f"indirect_dim {indirect_dim} of '{tensor.name}' "
             f"{list(tensor.shape)}")
    stride = tensor.strides[indirect_dim]
    shape = [count for _, count in pairs]
    strides = [s for s, _ in pairs]
    if vector_offset is not None:
        if indirect_dim != 0:
            fail("err_unsupported_indirect_access", "vector_offset moves the first dimension "
                 "(indirect_dim=0)")
        index = _index_tile(vector_offset, "vector_offset", rows=shape[0])
        # The pattern's first stride is the index's, not the pattern's.
        strides[0] = 0
        return _derived(tensor, shape, strides, start, Indirect(index, 0, stride))
    index = _index_tile(scalar_offset, "scalar_offset")
    scale = math.prod(tensor.shape[indirect_dim + 1:])
    return _derived(tensor, shape, strides, start, Indirect(index, None, scale))


def select(tensor, dim, index):
    """tensor.select(dim, tile): `dim` picked by the tile's value."""
    _base(tensor, "select")
    tile = _index_tile(index, "select's index")
    shape = tensor.shape[:dim] + tensor.shape[dim + 1:]
    strides = tensor.strides[:dim] + tensor.strides[dim + 1:]
    return _derived(tensor, shape, strides, tensor.offset,
                    Indirect(tile, None, tensor.strides[dim]))


def vector_select(tensor, dim, vector_offset):
    """tensor.vector_select(dim, idx): partition w reads index idx[w] of
    `dim`; the view's first dimension is idx's partitions."""
    _base(tensor, "vector_select")
    tile = _index_tile(vector_offset, "vector_offset",
                       rows=vector_offset.compute_view().shape[0]
                       if hasattr(vector_offset, "compute_view") else None)
    rows = tile.shape[0]
    shape = (rows,) + tensor.shape[:dim] + tensor.shape[dim + 1:]
    strides = (0,) + tensor.strides[:dim] + tensor.strides[dim + 1:]
    return _derived(tensor, shape, strides, tensor.offset,
                    Indirect(tile, 0, tensor.strides[dim]))


def index_rows(tensor, dim, index, rest):
    """The legacy tensor[..., idx_tile[...], ...]: `dim` indexed by the
    tile's values (one per row of the view), the other dimensions by the
    index expressions `rest` (dimension -> expression), which give the view
    its other axes."""
    _base(tensor, "an index by a tile")
    tile = _index_tile(index, "an index tile", rows=index.compute_view().shape[0])
    from nki._index import IndexExpr, _broadcast
    rows = tile.shape[0]
    expressions = {d: e for d, e in rest.items()}
    others = [e for e in expressions.values()]
    shape = _broadcast((rows, 1), *(e.shape for e in others)) if others else (rows, 1)
    ndim = len(shape)
    strides, offset = [0] * ndim, tensor.offset
    for d, expression in expressions.items():
        if not isinstance(expression, IndexExpr):
            fail("err_invalid_index", f"index {expression!r} of tensor '{tensor.name}'")
        _, coeffs = expression._padded(ndim)
        if coeffs[0]:
            fail("err_unsupported_indirect_access", f"an index of '{tensor.name}' runs along "
                 "the rows an index tile picks")
        offset += expression.const * tensor.strides[d]
        for axis, coeff in enumerate(coeffs):
            strides[axis] += coeff * tensor.strides[d]
    return _derived(tensor, shape, strides, offset, Indirect(tile, 0, tensor.strides[dim]))

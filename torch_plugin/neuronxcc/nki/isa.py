"""neuronxcc.nki.isa: the legacy nki.isa, whose instructions return their
result (a new tile) where the current API takes `dst` first, and take the
legacy mask= and dtype=. Each is the current instruction of the same name
writing a tile made for it."""

import math
import sys

import nki.isa as _current
from nki import _dtypes, _index, _nl_math, _nl_memory
from nki._errors import fail, unsupported_api
from nki._trace import psum, sbuf
from nki.isa import (dge_mode, engine, get_nc_version, nc_version, oob_mode,  # noqa: F401
                     reduce_cmd)

# `from neuronxcc.nki.isa.constants import dge_mode`: the current package's
# module, importable under the legacy name although this is a module.
constants = _current.constants
sys.modules[__name__ + ".constants"] = constants

tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown
dma_engine = engine.dma


def _tile(shape, dtype, buffer=sbuf):
    return _nl_memory.ndarray(shape, dtype, buffer)


def activation(op, data, *, bias=None, scale=1.0, reduce_op=None, reduce_res=None,
               reduce_cmd=None, mask=None, dtype=None, **kwargs):
    with _index.masked(mask):
        out = _tile(data.shape, dtype or data.dtype)
        _current.activation(out, op, data, bias=bias, scale=scale, reduce_op=reduce_op,
                            reduce_res=reduce_res)
        return out


def activation_reduce(op, data, *, reduce_op, reduce_res, bias=None, scale=1.0, mask=None,
                      dtype=None, **kwargs):
    return activation(op, data, bias=bias, scale=scale, reduce_op=reduce_op,
                      reduce_res=reduce_res, mask=mask, dtype=dtype)


def dma_copy(*, dst, src, mask=None, dst_rmw_op=None, oob_mode=None, dge_mode=None):
    with _index.masked(mask):
        if dst_rmw_op is not None:
            _current.dma_compute(dst, [dst, src], dst_rmw_op)
        else:
            _current.dma_copy(dst, src)


def dma_transpose(src, *, axes=None, mask=None, dtype=None, **kwargs):
    order = tuple(axes) if axes is not None else tuple(reversed(range(src.ndim)))
    with _index.masked(mask):
        out = _tile(tuple(src.shape[a] for a in order), dtype or src.dtype)
        _current.dma_transpose(out, src, axes=axes)
        return out


def iota(expr, dtype, *, mask=None, **kwargs):
    """The values of index expression `expr` (or an integer) as a tile."""
    if isinstance(expr, int):
        expr = _index.IndexExpr((1, 1), expr, (0, 0))
    if not _index.is_expression(expr):
        fail("err_invalid_operand", f"iota's expr is an index expression, not {expr!r}")
    shape = expr.shape if len(expr.shape) >= 2 else expr.shape + (1,) * (2 - len(expr.shape))
    coeffs = expr.coeffs + (0,) * (len(shape) - len(expr.coeffs))
    with _index.masked(mask):
        out = _tile(shape, dtype)
        _current.iota(out, [[coeffs[k], shape[k]] for k in range(1, len(shape))],
                      offset=expr.const, channel_multiplier=coeffs[0])
        return out


def memset(shape, value, dtype, *, mask=None, engine=None, **kwargs):
    with _index.masked(mask):
        out = _tile(shape, dtype)
        _current.memset(out, value)
        return out


def nc_matmul(stationary, moving, *, is_stationary_onezero=False, is_moving_onezero=False,
              is_transpose=False, tile_position=(), tile_size=(), mask=None, **kwargs):
    rows = math.prod(stationary.shape) // stationary.partitions
    columns = math.prod(moving.shape) // moving.partitions
    # The legacy compiler moves a PSUM operand (a transpose's result, say)
    # to SBUF first.
    stationary, moving = (_nl_memory.copy(t) if t.buffer is psum else t
                          for t in (stationary, moving))
    with _index.masked(mask):
        out = _tile((rows, columns), "float32", psum)
        _current.nc_matmul(out, stationary, moving, is_transpose=is_transpose,
                           tile_position=tile_position or None, tile_size=tile_size or None)
        return out


def nc_transpose(data, *, mask=None, dtype=None, engine=None, **kwargs):
    columns = math.prod(data.shape) // data.partitions
    on_vector = engine == _current.engine.vector
    with _index.masked(mask):
        out = _tile((columns, data.partitions), dtype or data.dtype, sbuf if on_vector else psum)
        _current.nc_transpose(out, data, engine=engine)
        return out


def reciprocal(data, *, dtype=None, mask=None, **kwargs):
    with _index.masked(mask):
        out = _tile(data.shape, dtype or data.dtype)
        _current.reciprocal(out, data)
        return out


def tensor_copy(src, *, mask=None, dtype=None, engine=None, **kwargs):
    with _index.masked(mask):
        out = _tile(src.shape, dtype or src.dtype)
        _current.tensor_copy(out, src, engine=engine)
        return out


def tensor_copy_predicated(*, src, dst, predicate, reverse_pred=False, mask=None, dtype=None,
                           **kwargs):
    with _index.masked(mask):
        _current.tensor_copy_predicated(dst, src, predicate, reverse_pred=reverse_pred)


tensor_copy_dynamic_src = unsupported_api("nisa.tensor_copy_dynamic_src",
                                          "it reads at an offset read from SBUF at run time")
tensor_copy_dynamic_dst = unsupported_api("nisa.tensor_copy_dynamic_dst",
                                          "it writes at an offset read from SBUF at run time")


def tensor_reduce(op, data, axis, *, mask=None, dtype=None, negate=False, keepdims=False,
                  **kwargs):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a + data.ndim if a < 0 else a for a in axes)
    if keepdims:
        shape = tuple(1 if d in axes else s for d, s in enumerate(data.shape))
    else:
        shape = tuple(s for d, s in enumerate(data.shape) if d not in axes)
        if len(shape) < 2:
            shape = shape + (1,) * (2 - len(shape))
    with _index.masked(mask):
        out = _tile(shape, dtype or data.dtype)
        _current.tensor_reduce(out, op, data, axes, negate=negate, keepdims=keepdims)
        return out


def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False,
                  *, dtype=None, mask=None, engine=None, **kwargs):
    with _index.masked(mask):
        out = _tile(data.shape, dtype or data.dtype)
        _current.tensor_scalar(out, data, op0, operand0, reverse0=reverse0, op1=op1,
                               operand1=operand1, reverse1=reverse1)
        return out


def tensor_tensor(data1, data2, op, *, dtype=None, mask=None, engine=None, **kwargs):
    with _index.masked(mask):
        out = _tile(data1.shape, dtype or _dtypes.promote(data1.dtype, data2.dtype))
        _current.tensor_tensor(out, data1, data2, op)
        return out


builtin_custom_op = unsupported_api("nisa.builtin_custom_op",
                                    "it runs AWS's compiled GpSimd libraries")


def tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0=False, reverse1=False, *,
                       dtype=None, mask=None, **kwargs):
    with _index.masked(mask):
        out = _tile(data0.shape, dtype or _dtypes.promote(data0.dtype, data1.dtype))
        _current.tensor_tensor_scan(out, data0, data1, initial, op0, op1, reverse0=reverse0,
                                    reverse1=reverse1)
        return out


def scalar_tensor_tensor(*, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False,
                         dtype=None, mask=None, **kwargs):
    with _index.masked(mask):
        out = _tile(data.shape, dtype or data.dtype)
        _current.scalar_tensor_tensor(out, data, op0, operand0, op1, operand1,
                                      reverse0=reverse0, reverse1=reverse1)
        return out


def tensor_scalar_reduce(*, data, op0, operand0, reduce_op, reduce_res, reverse0=False,
                         dtype=None, mask=None, **kwargs):
    with _index.masked(mask):
        out = _tile(data.shape, dtype or data.dtype)
        _current.tensor_scalar_reduce(out, data, op0, operand0, reduce_op, reduce_res=reduce_res,
                                      reverse0=reverse0)
        return out


def tensor_partition_reduce(op, data, *, mask=None, dtype=None, **kwargs):
    with _index.masked(mask):
        out = _tile((1,) + tuple(data.shape[1:]), dtype or data.dtype)
        _current.tensor_partition_reduce(out, op, data)
        return out


def bn_stats(data, *, mask=None, dtype=None, **kwargs):
    with _index.masked(mask):
        out = _tile((data.shape[0], 6), dtype or data.dtype)
        _current.bn_stats(out, data)
        return out


def bn_aggr(data, *, mask=None, dtype=None, **kwargs):
    with _index.masked(mask):
        out = _tile((data.shape[0], 2), dtype or data.dtype)
        _current.bn_aggr(out, data)
        return out


def affine_select(pred, on_true_tile, on_false_value, *, mask=None, dtype=None, **kwargs):
    """on_true_tile where the predicate (a comparison of index expressions)
    holds, else on_false_value; one affine_select per comparison of it."""
    constraints = getattr(pred, "affine", None)
    if not constraints:
        fail("err_invalid_operand", "affine_select's pred is a comparison of nl.arange / nl.mgrid "
             "expressions (or several combined with '&')")
    with _index.masked(mask):
        out = _tile(on_true_tile.shape, dtype or on_true_tile.dtype)
        source = on_true_tile
        for expression, comparison in constraints:
            _, coeffs = expression._padded(len(out.shape))
            pattern = [[coeffs[k], out.shape[k]] for k in range(1, len(out.shape))]
            _current.affine_select(out, pattern, coeffs[0], source, on_false_value,
                                   cmp_op=_nl_math.OPERATORS[comparison], offset=expression.const)
            source = out
        return out


def range_select(*, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd=None,
                 reduce_res=None, reduce_op=None, range_start=0, on_false_value=None, mask=None,
                 dtype=None, **kwargs):
    with _index.masked(mask):
        out = _tile(on_true_tile.shape, dtype or on_true_tile.dtype)
        _current.range_select(out, on_true_tile, comp_op0, comp_op1, bound0, bound1,
                              reduce_cmd=reduce_cmd or "idle", reduce_res=reduce_res,
                              reduce_op=reduce_op, range_start=range_start,
                              **({} if on_false_value is None else
                                 {"on_false_value": on_false_value}))
        return out


def select_reduce(*, dst, predicate, on_true, on_false, reduce_res=None, reduce_cmd=None,
                  reduce_op=None, reverse_pred=False, mask=None, dtype=None, **kwargs):
    with _index.masked(mask):
        _current.select_reduce(dst, predicate, on_true, on_false, reduce_res=reduce_res,
                               reduce_cmd=reduce_cmd or "idle", reduce_op=reduce_op,
                               reverse_pred=reverse_pred)
        return dst


def max8(*, src, mask=None, dtype=None, **kwargs):
    with _index.masked(mask):
        out = _tile((src.shape[0], 8), dtype or src.dtype)
        _current.max8(out, src)
        return out


def nc_find_index8(*, data, vals, mask=None, dtype=None, **kwargs):
    with _index.masked(mask):
        out = _tile((data.shape[0], 8), dtype or "uint32")
        _current.nc_find_index8(out, data, vals)
        return out


def nc_match_replace8(*, data, vals, imm, dst_idx=None, mask=None, dtype=None, **kwargs):
    with _index.masked(mask):
        out = _tile(data.shape, dtype or data.dtype)
        _current.nc_match_replace8(out, data, vals, imm, dst_idx=dst_idx)
        return out


def nc_stream_shuffle(src, dst, shuffle_mask, *, dtype=None, mask=None, **kwargs):
    with _index.masked(mask):
        _current.nc_stream_shuffle(dst, src, shuffle_mask)


def local_gather(src_buffer, index, num_elem_per_idx=1, num_valid_indices=None, *, mask=None):
    valid = num_valid_indices or index.size // (index.shape[0] // 16)
    with _index.masked(mask):
        out = _tile((src_buffer.shape[0], valid * num_elem_per_idx), src_buffer.dtype)
        _current.local_gather(out, src_buffer, index, num_elem_per_idx=num_elem_per_idx,
                              num_valid_indices=num_valid_indices)
        return out


def sequence_bounds(*, segment_ids, dtype=None):
    out = _tile((1, 2, segment_ids.size), dtype or segment_ids.dtype)
    _current.sequence_bounds(out, segment_ids)
    return out


def dropout(data, prob, *, mask=None, dtype=None, **kwargs):
    with _index.masked(mask):
        out = _tile(data.shape, dtype or data.dtype)
        _current.dropout(out, data, prob)
        return out


from neuronxcc.nki.language import fp32  # noqa: E402  (nisa.fp32 is nl.fp32)


def tensor_scalar_cumulative(*args, **kwargs):
    """The current API's instruction (its dst= keyword style), which AWS's
    example tests call through this namespace."""
    return _current.tensor_scalar_cumulative(*args, **kwargs)

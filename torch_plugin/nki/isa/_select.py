"""nki.isa's selections, searches and gathers: affine_select, range_select,
select_reduce, the top-8 family (max8, nc_find_index8, nc_match_replace8),
nc_stream_shuffle, local_gather, nc_n_gather, sequence_bounds and
nonzero_with_count."""

import math

from nki import _dtypes, _trace
from nki._errors import fail
from nki.isa._accumulators import reduce_flags
from nki.isa._checks import (alu, check_space, elements_match, engine_view, partitions_match,
                             per_partition)
from nki.isa._move import check_gather_index

_FLOAT32_MIN = -3.4028234663852886e38


def _free_size(tile):
    return tile.size // tile.shape[0]


def affine_select(dst, pattern, channel_multiplier, on_true_tile, on_false_value, cmp_op=None,
                  offset=0, name=None):
    """dst = on_true_tile where cmp_op(offset + channel_multiplier * p +
    sum(step_k * f_k), 0) holds, else on_false_value (GpSimd engine).
    `pattern` is [[step, count], ...] over dst's free elements."""
    dst = engine_view(dst, "dst", "affine_select")
    on_true = engine_view(on_true_tile, "on_true_tile", "affine_select")
    partitions_match("affine_select", dst=dst, on_true_tile=on_true)
    elements_match("affine_select", dst, on_true, "on_true_tile")
    pattern = [tuple(int(v) for v in pair) for pair in pattern]
    if math.prod(count for _, count in pattern) != _free_size(dst):
        fail("err_shape_mismatch", f"affine_select's pattern {pattern} covers "
             f"{math.prod(c for _, c in pattern)} elements per partition; dst has "
             f"{_free_size(dst)}")
    compare = alu(cmp_op if cmp_op is not None else _EQUAL, "affine_select", "cmp_op")
    # The pattern walks dst's free elements in order: give the view the
    # pattern's shape.
    shaped = dst.reshape((dst.shape[0],) + tuple(c for _, c in pattern))
    shaped_true = on_true.reshape(shaped.shape)
    _trace.current().record("affine_select", [shaped, shaped_true], alu=[compare],
                            scalars=[offset, channel_multiplier, float(on_false_value)],
                            axes=[step for step, _ in pattern])


class _Equal:
    alu = "equal"


_EQUAL = _Equal()


def range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd="reset_reduce",
                 reduce_res=None, reduce_op=None, range_start=0, on_false_value=_FLOAT32_MIN,
                 name=None):
    """dst[p, i] = on_true_tile[p, i] where comp_op0(range_start + i, bound0[p])
    and comp_op1(range_start + i, bound1[p]), else on_false_value; the
    Vector engine's accumulator keeps the maximum (reduce_cmd)."""
    dst = engine_view(dst, "dst", "range_select")
    on_true = engine_view(on_true_tile, "on_true_tile", "range_select")
    partitions_match("range_select", dst=dst, on_true_tile=on_true)
    elements_match("range_select", dst, on_true, "on_true_tile")
    if reduce_op is not None and alu(reduce_op, "range_select", "reduce_op") != "maximum":
        fail("err_unsupported_operator", "range_select reduces with nl.maximum only")
    bounds = [per_partition(b, dst, what, "range_select")[0]
              for b, what in ((bound0, "bound0"), (bound1, "bound1"))]
    if any(b is None for b in bounds):
        fail("err_invalid_operand", "range_select's bounds are [P, 1] tiles")
    result = per_partition(reduce_res, dst, "reduce_res", "range_select")[0] \
        if reduce_res is not None else None
    _trace.current().record(
        "range_select", [dst, on_true, bounds[0], bounds[1], result], writes=(0, 4),
        alu=[alu(comp_op0, "range_select", "comp_op0"), alu(comp_op1, "range_select", "comp_op1")],
        scalars=[range_start, on_false_value], flags=reduce_flags(reduce_cmd)[:2])


def select_reduce(dst, predicate, on_true, on_false, reduce_res=None, reduce_cmd="idle",
                  reduce_op=None, reverse_pred=False, name=None):
    """dst = on_true where predicate is nonzero (zero with reverse_pred),
    else on_false (a number or [P, 1]); the Vector engine's accumulator
    keeps the maximum (reduce_cmd)."""
    dst = engine_view(dst, "dst", "select_reduce")
    predicate = engine_view(predicate, "predicate", "select_reduce")
    on_true = engine_view(on_true, "on_true", "select_reduce")
    partitions_match("select_reduce", dst=dst, predicate=predicate, on_true=on_true)
    elements_match("select_reduce", dst, on_true, "on_true")
    elements_match("select_reduce", dst, predicate, "predicate")
    if reduce_op is not None and alu(reduce_op, "select_reduce", "reduce_op") != "maximum":
        fail("err_unsupported_operator", "select_reduce reduces with nl.maximum only")
    false_tile, false_value = per_partition(on_false, dst, "on_false", "select_reduce")
    result = per_partition(reduce_res, dst, "reduce_res", "select_reduce")[0] \
        if reduce_res is not None else None
    _trace.current().record(
        "select_reduce", [dst, predicate, on_true, false_tile, result], writes=(0, 4),
        scalars=[false_value], flags=[reverse_pred] + reduce_flags(reduce_cmd)[:2])


def _top8_operands(instruction, dst, data, what="src"):
    dst = engine_view(dst, "dst", instruction)
    data = engine_view(data, what, instruction)
    partitions_match(instruction, dst=dst, **{what: data})
    if not 8 <= _free_size(data) <= 16384:
        fail("err_size_of_dimension_exceed_arch_limit", f"'{instruction}' reads 8 to 16384 "
             f"elements per partition; {what}{list(data.shape)} has {_free_size(data)}")
    return dst, data


def max8(dst, src, name=None):
    """dst[p, 0:8] = the 8 largest values of src[p], descending."""
    dst, src = _top8_operands("max8", dst, src)
    if _free_size(dst) != 8:
        fail("err_shape_mismatch", f"max8 writes 8 values per partition; dst is {list(dst.shape)}")
    _trace.current().record("max8", [dst, src])


def nc_find_index8(dst, data, vals, name=None):
    """dst[p, j] = the index in data[p] of vals[p, j]'s first occurrence
    (a value equal to an earlier one takes the next occurrence); all ones
    where there is none."""
    dst, data = _top8_operands("nc_find_index8", dst, data, "data")
    vals = engine_view(vals, "vals", "nc_find_index8")
    if _free_size(vals) != 8 or _free_size(dst) != 8:
        fail("err_shape_mismatch", "nc_find_index8 finds 8 values per partition (vals and dst "
             "hold 8 each)")
    if _dtypes.is_float(dst.dtype):
        fail("err_unsupported_dtype", "nc_find_index8 writes uint16 or uint32 indices")
    _trace.current().record("nc_find_index8", [dst, data, vals])


def nc_match_replace8(dst, data, vals, imm, dst_idx=None, name=None):
    """dst = data with the occurrences of the 8 vals (as nc_find_index8
    pairs them, the last value first) replaced by imm; dst_idx = their
    indices."""
    dst, data = _top8_operands("nc_match_replace8", dst, data, "data")
    vals = engine_view(vals, "vals", "nc_match_replace8")
    elements_match("nc_match_replace8", dst, data, "data")
    if _free_size(vals) != 8:
        fail("err_shape_mismatch", "nc_match_replace8 matches 8 values per partition")
    index = engine_view(dst_idx, "dst_idx", "nc_match_replace8") if dst_idx is not None else None
    _trace.current().record("nc_match_replace8", [dst, data, vals, index], writes=(0, 3),
                            scalars=[float(imm)])


def nc_stream_shuffle(dst, src, shuffle_mask, name=None):
    """dst's partition i of each group of 32 = src's partition
    shuffle_mask[i] of the group (255: dst keeps it)."""
    dst = engine_view(dst, "dst", "nc_stream_shuffle")
    src = engine_view(src, "src", "nc_stream_shuffle")
    mask = [int(m) for m in shuffle_mask]
    if len(mask) != 32 or any(not (0 <= m < 32 or m == 255) for m in mask):
        fail("err_invalid_operand", f"a shuffle mask is 32 source partitions (0 to 31, or 255 "
             f"to leave one); got {mask}")
    if _free_size(dst) != _free_size(src):
        fail("err_shape_mismatch", f"nc_stream_shuffle moves whole partitions: src"
             f"{list(src.shape)} and dst{list(dst.shape)} differ per partition")
    if dst.dtype != src.dtype:
        fail("err_unsupported_dtype", "nc_stream_shuffle moves data of one dtype")
    _trace.current().record("nc_stream_shuffle", [dst, src], axes=mask)


def local_gather(dst, src_buffer, index, num_elem_per_idx=1, num_valid_indices=None, name=None):
    """Per group of 16 partitions (a GpSimd core): the group's indices, read
    partition-first, are element offsets into each partition's data;
    dst[p, k*E:(k+1)*E] = src_buffer[p, idx[k]:idx[k]+E]."""
    dst = engine_view(dst, "dst", "local_gather")
    src = engine_view(src_buffer, "src_buffer", "local_gather")
    index = check_gather_index(index, "index", "local_gather")
    for tile, what in ((dst, "dst"), (src, "src_buffer"), (index, "index")):
        check_space(tile, what, "local_gather", "sbuf")
    if num_elem_per_idx not in (1, 2, 4, 8, 16, 32):
        fail("err_invalid_operand", f"num_elem_per_idx is 1, 2, 4, 8, 16 or 32; got "
             f"{num_elem_per_idx}")
    if src.shape[0] % 16 or index.shape[0] != src.shape[0]:
        fail("err_num_partition_mismatch", "local_gather works on groups of 16 partitions: src "
             "and index have the same multiple of 16")
    available = index.size // (index.shape[0] // 16)
    valid = num_valid_indices or available
    if valid > available or _free_size(dst) != valid * num_elem_per_idx or \
            dst.shape[0] != src.shape[0]:
        fail("err_shape_mismatch", f"local_gather of {valid} indices of {num_elem_per_idx} "
             f"elements writes [{src.shape[0]}, {valid * num_elem_per_idx}]; dst is "
             f"{list(dst.shape)}")
    _trace.current().record("local_gather", [dst, src, index],
                            scalars=[num_elem_per_idx, num_valid_indices or 0])


def nc_n_gather(dst, data, indices, name=None):
    """dst[p, j] = data[p, indices[p, j]] (indices into each partition's
    elements)."""
    dst = engine_view(dst, "dst", "nc_n_gather")
    data = engine_view(data, "data", "nc_n_gather")
    indices = check_gather_index(indices, "indices", "nc_n_gather")
    partitions_match("nc_n_gather", dst=dst, data=data, indices=indices)
    elements_match("nc_n_gather", dst, indices, "indices")
    _trace.current().record("nc_n_gather", [dst, data, indices])


def sequence_bounds(dst, segment_ids, name=None):
    """dst [1, 2, n]: each element's segment start and exclusive end (runs
    of equal ids; id 0 is padding: n and -1)."""
    dst = engine_view(dst, "dst", "sequence_bounds")
    ids = engine_view(segment_ids, "segment_ids", "sequence_bounds")
    if ids.shape[0] != 1 or dst.shape[0] != 1 or dst.size != 2 * ids.size:
        fail("err_shape_mismatch", f"sequence_bounds reads segment_ids [1, n] and writes "
             f"[1, 2, n]; got {list(ids.shape)} and {list(dst.shape)}")
    _trace.current().record("sequence_bounds", [dst, ids])


def nonzero_with_count(dst, src, index_offset=0, padding_val=-1, name=None):
    """Partitions 0, 16, ..., 112: the indices (plus index_offset) of src's
    nonzero elements, padding_val after them, and their count last."""
    dst = engine_view(dst, "dst", "nonzero_with_count")
    src = engine_view(src, "src", "nonzero_with_count")
    if _free_size(dst) != _free_size(src) + 1:
        fail("err_shape_mismatch", f"nonzero_with_count writes {_free_size(src) + 1} values per "
             f"partition (the indices and the count); dst is {list(dst.shape)}")
    _trace.current().record("nonzero_with_count", [dst, src],
                            scalars=[index_offset, padding_val])

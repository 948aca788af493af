"""Instructions that move and fill data: DMAs (dma_copy, dma_transpose),
on-chip copies (tensor_copy, tensor_copy_predicated), memset and iota."""

import math

from nki import _dtypes, _trace
from nki._errors import fail
from nki.isa._checks import (check_on_chip, check_tensor, elements_match, engine_view,
                             partitions_match)


def dma_copy(dst, src, oob_mode=None, dge_mode=None, name=None, priority=None, engine=None):
    """Copies src into dst by DMA (HBM and SBUF; never PSUM). Element counts
    must agree; the dtype is converted when they differ."""
    check_tensor(dst, "dst", "dma_copy")
    check_tensor(src, "src", "dma_copy")
    for tile, what in ((src, "src"), (dst, "dst")):
        if tile._allocation.space == "psum":
            fail("err_unsupported_memory", f"Expected operand '{what}' of 'dma_copy' to be in "
                 "address space 'hbm' or 'sbuf', but got a tile in 'psum' instead (copy PSUM "
                 "to SBUF with nisa.tensor_copy first).")
    elements_match("dma_copy", dst, src)
    _trace.current().record("dma_copy", [dst, src])


def dma_transpose(dst, src, axes=None, priority=None, dge_mode=None, oob_mode=None, name=None):
    """dst = src with its dimensions reversed (or permuted by `axes`), by a
    DMA that transposes as it moves."""
    check_tensor(dst, "dst", "dma_transpose")
    check_tensor(src, "src", "dma_transpose")
    order = tuple(axes) if axes is not None else tuple(reversed(range(src.ndim)))
    transposed = src.permute(order)
    if transposed.shape != dst.shape and transposed.size == dst.size and dst.ndim == 2 and \
            src.ndim > 2:
        fail("err_shape_mismatch", f"dma_transpose of src{list(src.shape)} by {order} gives "
             f"{list(transposed.shape)}; dst is {list(dst.shape)}")
    elements_match("dma_transpose", dst, transposed)
    _trace.current().record("dma_transpose", [dst, transposed])


def tensor_copy(dst, src, engine=None, name=None, dtype=None):
    """Copies a tile on chip (Vector, Scalar or GpSimd engine); the value is
    converted to dst's dtype."""
    dst = engine_view(dst, "dst", "tensor_copy")
    src = engine_view(src, "src", "tensor_copy")
    partitions_match("tensor_copy", dst=dst, src=src)
    elements_match("tensor_copy", dst, src)
    _trace.current().record("tensor_copy", [dst, src])


def memset(dst, value, engine=None, name=None):
    dst = engine_view(dst, "dst", "memset")
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        if type(value).__module__ == "numpy":
            value = value.item()
        else:
            fail("err_invalid_operand", f"memset's value must be a number, not {value!r}")
    if not _dtypes.is_float(dst.dtype) and value != int(value):
        fail("err_invalid_operand", f"memset of {value} into an integer tile ({dst.dtype})")
    _trace.current().record("memset", [dst], scalars=[value])


def tensor_copy_predicated(dst, src, predicate, reverse_pred=False, name=None):
    """dst = src where predicate is nonzero (zero with reverse_pred); dst
    keeps its values elsewhere. src may be a number."""
    dst = engine_view(dst, "dst", "tensor_copy_predicated")
    predicate = engine_view(predicate, "predicate", "tensor_copy_predicated")
    if isinstance(src, (int, float)) and not isinstance(src, bool):
        from nki import _nl_memory
        src = _nl_memory.full(dst.shape, src, dst.dtype)
    src = engine_view(src, "src", "tensor_copy_predicated")
    partitions_match("tensor_copy_predicated", dst=dst, src=src, predicate=predicate)
    elements_match("tensor_copy_predicated", dst, src)
    elements_match("tensor_copy_predicated", dst, predicate, "predicate")
    if reverse_pred:
        from nki import _nl_math, _nl_memory
        from nki.isa import _vector as _isa_vector
        inverted = _nl_memory.ndarray(predicate.shape, "float32")
        _isa_vector.tensor_scalar(inverted, predicate, _nl_math.OPERATORS["equal"], 0.0)
        predicate = inverted
    _trace.current().record("tensor_copy_predicated", [dst, src, predicate])


def iota(dst, pattern, offset=0, channel_multiplier=0, name=None):
    """dst[p, f...] = offset + channel_multiplier * p + sum(step_k * f_k):
    `pattern` is [[step, count], ...] over dst's free dimensions."""
    dst = engine_view(dst, "dst", "iota")
    if dst._allocation.space != "sbuf":
        fail("err_unsupported_memory", "iota writes SBUF")
    pattern = [tuple(int(v) for v in pair) for pair in pattern]
    counts = tuple(count for _, count in pattern)
    if math.prod(counts) != dst.size // dst.shape[0]:
        fail("err_shape_mismatch", f"iota's pattern {pattern} covers {math.prod(counts)} "
             f"elements per partition; dst{list(dst.shape)} has {dst.size // dst.shape[0]}")
    # The pattern walks dst's free elements in order.
    shaped = dst if dst.shape[1:] == counts else dst.reshape((dst.shape[0],) + counts)
    _trace.current().record("iota", [shaped], scalars=[offset, channel_multiplier],
                            axes=[step for step, _ in pattern])


def check_gather_index(index, what, instruction):
    index = check_on_chip(index, what, instruction).compute_view()
    if _dtypes.is_float(index.dtype):
        fail("err_unsupported_dtype", f"'{what}' of '{instruction}' holds integer indices, not "
             f"{_dtypes.name(index.dtype)}")
    return index


def dma_compute(dst, srcs, reduce_op, scales=None, unique_indices=True, oob_mode=None,
                name=None):
    """dst = the sum of srcs (a DMA that adds, in float32; at most 16
    sources of dst's element count, HBM or SBUF)."""
    from nki.isa._checks import alu
    check_tensor(dst, "dst", "dma_compute")
    sources = list(srcs)
    if not 1 <= len(sources) <= 16:
        fail("err_invalid_operand", f"dma_compute adds 1 to 16 sources; got {len(sources)}")
    if alu(reduce_op, "dma_compute", "reduce_op") != "add":
        fail("err_unsupported_operator", "dma_compute reduces with nl.add only")
    if scales is not None and any(float(s) != 1.0 for s in scales):
        fail("err_invalid_operand", "dma_compute's scales are all 1.0")
    for index, source in enumerate(sources):
        check_tensor(source, f"srcs[{index}]", "dma_compute")
        elements_match("dma_compute", dst, source, f"srcs[{index}]")
    for tile, what in [(dst, "dst")] + [(s, "srcs") for s in sources]:
        if tile._allocation.space == "psum":
            fail("err_unsupported_memory", f"a DMA cannot read or write PSUM ({what})")
    _trace.current().record("dma_compute", [dst] + sources, alu=["add"])

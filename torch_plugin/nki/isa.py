"""nki.isa: one call, one NeuronCore instruction, with its destination
given explicitly as the first argument (the current NKI API).

Implemented: dma_copy, tensor_copy, tensor_copy_predicated, memset,
tensor_tensor, tensor_scalar, activation, reciprocal, nc_matmul,
nc_transpose, tensor_reduce, iota. Each
checks the hardware's rules as it is traced (memory spaces, partition
counts and limits, matmul sizes) and raises NkiValidationError naming the
rule and the kernel's line.
"""

import math

import torch

from nki import _trace
from nki._trace import NkiTensor, NkiValidationError, fail

__all__ = ["NkiValidationError", "activation", "dma_copy", "engine", "get_nc_version", "iota",
           "memset", "nc_matmul", "nc_transpose", "nc_version", "reciprocal", "tensor_copy",
           "tensor_copy_predicated", "tensor_reduce", "tensor_scalar", "tensor_tensor",
           "dge_mode", "oob_mode"]


class engine:
    """Engines an instruction may name (engine=); accepted, and recorded
    only through the instruction's kind on the simulated core."""
    tensor = "tensor"
    vector = "vector"
    scalar = "scalar"
    gpsimd = "gpsimd"
    sync = "sync"
    unknown = "unknown"


class dge_mode:
    none = "none"
    swdge = "swdge"
    hwdge = "hwdge"
    unknown = "unknown"


class oob_mode:
    error = "error"
    skip = "skip"


class nc_version:
    gen2 = 2
    gen3 = 3


def get_nc_version():
    from nki import _target
    return nc_version.gen3 if _target.current().name == "trn2" else nc_version.gen2


def _tensor(value, what, instruction):
    if not isinstance(value, NkiTensor):
        fail("err_invalid_operand", f"operand '{what}' of '{instruction}' must be a tensor of "
             f"the kernel, not {type(value).__name__}")
    return value


def _on_chip(value, what, instruction):
    _tensor(value, what, instruction)
    if not value._allocation.on_chip:
        fail("err_unsupported_memory", f"Expected operand '{what}' of '{instruction}' to be in "
             f"address space 'sbuf' or 'psum', but got a tile in 'hbm' instead.")
    return value


def _partitions_match(instruction, **tiles):
    counts = {name: tile.shape[0] for name, tile in tiles.items() if tile is not None}
    if len(set(counts.values())) > 1:
        described = ", ".join(f"{name}{list(tiles[name].shape)}" for name in counts)
        fail("err_num_partition_mismatch", "number of partitions (dimension 0 size of a tile) "
             f"mismatch in parameters ({described}) of '{instruction}'")


def _elements_match(instruction, dst, src, src_name="src"):
    if dst.size != src.size:
        fail("err_shape_mismatch", f"'{instruction}' writes {src.size} elements "
             f"({src_name}{list(src.shape)}) into dst{list(dst.shape)} of {dst.size}")


def _alu(op, instruction, what="op"):
    name = getattr(op, "alu", None)
    if name is None:
        fail("err_unsupported_operator", f"{what}={op!r} of '{instruction}' is not an "
             "arithmetic operator (nl.add, nl.multiply, nl.maximum, ...)")
    return name


def _per_partition(value, data, what, instruction):
    """A scalar operand: a number, or a tile of one value per partition."""
    if isinstance(value, NkiTensor):
        _on_chip(value, what, instruction)
        if value.shape[0] != data.shape[0] or value.size != value.shape[0]:
            fail("err_shape_mismatch", f"operand '{what}' of '{instruction}' must be "
                 f"[{data.shape[0]}, 1] (one value per partition); got {list(value.shape)}")
        return value, 0.0
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return None, float(value)
    fail("err_invalid_operand", f"operand '{what}' of '{instruction}' must be a number or a "
         f"[P, 1] tile, not {type(value).__name__}")


def dma_copy(dst, src, oob_mode=None, dge_mode=None, name=None):
    """Copies src into dst by DMA (HBM and SBUF; never PSUM). Element counts
    must agree; the dtype is converted when they differ."""
    _tensor(dst, "dst", "dma_copy")
    _tensor(src, "src", "dma_copy")
    for tile, what in ((src, "src"), (dst, "dst")):
        if tile._allocation.space == "psum":
            fail("err_unsupported_memory", f"Expected operand '{what}' of 'dma_copy' to be in "
                 "address space 'hbm' or 'sbuf', but got a tile in 'psum' instead (copy PSUM "
                 "to SBUF with nisa.tensor_copy first).")
    _elements_match("dma_copy", dst, src)
    _trace.current().record("dma_copy", [dst, src])


def tensor_copy(dst, src, engine=None, name=None):
    """Copies a tile on chip (Vector, Scalar or GpSimd engine)."""
    _on_chip(dst, "dst", "tensor_copy")
    _on_chip(src, "src", "tensor_copy")
    _partitions_match("tensor_copy", dst=dst, src=src)
    _elements_match("tensor_copy", dst, src)
    _trace.current().record("tensor_copy", [dst, src])


def memset(dst, value, engine=None, name=None):
    _on_chip(dst, "dst", "memset")
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        fail("err_invalid_operand", f"memset's value must be a number, not {value!r}")
    if not dst.dtype.is_floating_point and value != int(value):
        fail("err_invalid_operand", f"memset of {value} into an integer tile ({dst.dtype})")
    _trace.current().record("memset", [dst], scalars=[value])


def tensor_tensor(dst, data1, data2, op, engine=None, name=None):
    """dst = op(data1, data2), element by element, computed in float32."""
    for tile, what in ((dst, "dst"), (data1, "data1"), (data2, "data2")):
        _on_chip(tile, what, "tensor_tensor")
    if data1._allocation.space == "psum" and data2._allocation.space == "psum":
        fail("err_unsupported_memory", "'tensor_tensor' cannot read both data1 and data2 from "
             "PSUM")
    _partitions_match("tensor_tensor", dst=dst, data1=data1, data2=data2)
    if data1.shape != data2.shape:
        fail("err_shape_mismatch", f"'tensor_tensor' data1{list(data1.shape)} and "
             f"data2{list(data2.shape)} differ")
    _elements_match("tensor_tensor", dst, data1, "data1")
    _trace.current().record("tensor_tensor", [dst, data1, data2],
                            alu=[_alu(op, "tensor_tensor")])


def tensor_scalar(dst, data, op0, operand0, reverse0=False, op1=None, operand1=None,
                  reverse1=False, engine=None, name=None):
    """dst = op1(op0(data, operand0), operand1): operands are numbers or one
    value per partition ([P, 1] tiles); reverseN swaps the operands."""
    _on_chip(dst, "dst", "tensor_scalar")
    _on_chip(data, "data", "tensor_scalar")
    _partitions_match("tensor_scalar", dst=dst, data=data)
    _elements_match("tensor_scalar", dst, data, "data")
    tile0, value0 = _per_partition(operand0, data, "operand0", "tensor_scalar")
    alu = [_alu(op0, "tensor_scalar", "op0"), None]
    tile1, value1 = None, 0.0
    if op1 is not None:
        tile1, value1 = _per_partition(operand1, data, "operand1", "tensor_scalar")
        alu[1] = _alu(op1, "tensor_scalar", "op1")
    _trace.current().record("tensor_scalar", [dst, data, tile0, tile1], alu=alu,
                            scalars=[value0, value1], flags=[reverse0, reverse1])


def activation(dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None,
               reduce_cmd=None, name=None):
    """dst = op(data * scale + bias) on the Scalar engine; with reduce_res,
    also reduce_op of the results along the free dimensions, per partition."""
    function = getattr(op, "act", None)
    if function is None:
        fail("err_unsupported_activation", f"op={op!r} of 'activation' is not an activation "
             "function (nl.exp, nl.tanh, nl.copy, ...)")
    _on_chip(dst, "dst", "activation")
    _on_chip(data, "data", "activation")
    _partitions_match("activation", dst=dst, data=data)
    _elements_match("activation", dst, data, "data")
    bias_tile = None
    if bias is not None:
        bias_tile, _ = _per_partition(bias, data, "bias", "activation")
        if bias_tile is None:
            fail("err_invalid_operand", "activation's bias is a [P, 1] tile")
    scale_tile, scale_value = _per_partition(scale, data, "scale", "activation")
    alu = [None]
    if reduce_res is not None:
        _per_partition(reduce_res, data, "reduce_res", "activation")
        alu = [_alu(reduce_op if reduce_op is not None else _ADD, "activation", "reduce_op")]
    elif reduce_op is not None:
        fail("err_invalid_operand", "activation's reduce_op needs reduce_res")
    _trace.current().record("activation", [dst, data, bias_tile, scale_tile, reduce_res],
                            writes=(0, 4), alu=alu, activation=function,
                            scalars=[scale_value if scale_tile is None else 1.0])


class _AddOperator:
    alu = "add"


_ADD = _AddOperator()


class _ReciprocalFunction:
    act = "reciprocal"


def reciprocal(dst, data, engine=None, name=None):
    """dst = 1 / data."""
    activation(dst, _ReciprocalFunction, data)


def nc_matmul(dst, stationary, moving, accumulate=None, is_stationary_onezero=False,
              is_moving_onezero=False, is_transpose=False, tile_position=None, tile_size=None,
              perf_mode=None, name=None):
    """dst[M, N] = stationary[K, M]^T @ moving[K, N] on the Tensor engine:
    the contraction runs along the partitions; dst is a float32 PSUM tile.
    accumulate=None overwrites a PSUM tile no matmul has written yet and adds
    to it afterwards; True or False say so explicitly."""
    from nki import _target
    target = _target.current()
    _tensor(dst, "dst", "nc_matmul")
    if dst._allocation.space != "psum":
        fail("err_unsupported_memory", "Expected operand 'dst' of 'nc_matmul' to be in address "
             f"space 'psum', but got a tile in '{dst._allocation.space}' instead.")
    for tile, what in ((stationary, "stationary"), (moving, "moving")):
        _tensor(tile, what, "nc_matmul")
        if tile._allocation.space != "sbuf":
            fail("err_unsupported_memory", f"Expected operand '{what}' of 'nc_matmul' to be in "
                 f"address space 'sbuf', but got a tile in '{tile._allocation.space}' instead.")
    if dst.dtype != torch.float32:
        fail("err_unsupported_dtype", f"nc_matmul accumulates in float32 PSUM; dst is {dst.dtype}")
    if (stationary.dtype == torch.float32) != (moving.dtype == torch.float32):
        fail("err_unsupported_dtype", "nc_matmul: when one input is float32 the other must be "
             f"too (stationary {stationary.dtype}, moving {moving.dtype})")
    _partitions_match("nc_matmul", stationary=stationary, moving=moving)
    contraction = stationary.shape[0]
    columns = math.prod(stationary.shape[1:])
    free = math.prod(moving.shape[1:])
    if contraction > target.partitions:
        fail("err_num_partition_exceed_arch_limit", f"number of partitions {contraction} exceed "
             f"architecture limitation of {target.partitions}.")
    if columns > target.gemm_stationary_fmax:
        fail("err_size_of_dimension_exceed_arch_limit", f"free size {columns} of 'stationary"
             f"{list(stationary.shape)}' of 'nc_matmul' exceed architecture limitation of "
             f"{target.gemm_stationary_fmax} (tile_size.gemm_stationary_fmax).")
    if free > target.gemm_moving_fmax:
        fail("err_size_of_dimension_exceed_arch_limit", f"free size {free} of 'moving"
             f"{list(moving.shape)}' of 'nc_matmul' exceed architecture limitation of "
             f"{target.gemm_moving_fmax} (tile_size.gemm_moving_fmax).")
    if dst.shape[0] != columns or dst.size != columns * free:
        fail("err_shape_mismatch", f"nc_matmul of stationary{list(stationary.shape)} and "
             f"moving{list(moving.shape)} gives [{columns}, {free}]; dst is {list(dst.shape)}")
    if accumulate is None:
        accumulate = dst._allocation.accumulated
    _trace.current().record("nc_matmul", [dst, stationary, moving], flags=[accumulate])
    dst._allocation.accumulated = True


def nc_transpose(dst, data, engine=None, name=None):
    """dst[F, P] = data[P, F]^T (Tensor engine into PSUM, or Vector engine
    for tiles of at most 32x32)."""
    _on_chip(dst, "dst", "nc_transpose")
    _on_chip(data, "data", "nc_transpose")
    rows, columns = data.shape[0], data.size // max(1, data.shape[0])
    if columns > 128:
        fail("err_size_of_dimension_exceed_arch_limit", f"size of dimension 1 in "
             f"'data{list(data.shape)}' of 'nc_transpose' exceed architecture limitation of 128.")
    if dst.shape[0] != columns or dst.size != rows * columns:
        fail("err_shape_mismatch", f"nc_transpose of data{list(data.shape)} gives "
             f"[{columns}, {rows}]; dst is {list(dst.shape)}")
    _trace.current().record("nc_transpose", [dst, data])


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None):
    """dst = op over `axis` (free dimensions of data), per partition; negate
    multiplies the result by -1."""
    _on_chip(dst, "dst", "tensor_reduce")
    _on_chip(data, "data", "tensor_reduce")
    _partitions_match("tensor_reduce", dst=dst, data=data)
    alu = _alu(op, "tensor_reduce")
    if alu not in ("add", "multiply", "maximum", "minimum"):
        fail("err_unsupported_operator", f"tensor_reduce reduces with add, multiply, maximum or "
             f"minimum, not {alu}")
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a + data.ndim if a < 0 else a for a in axes)
    for a in axes:
        if not 1 <= a < data.ndim:
            fail("err_unsupported_reduce_axis", f"tensor_reduce: axis {a} is not a free "
                 f"dimension of data{list(data.shape)} (the partition dimension 0 cannot be "
                 "reduced)")
    remaining = math.prod(s for d, s in enumerate(data.shape) if d not in axes)
    if dst.size != remaining:
        fail("err_shape_mismatch", f"tensor_reduce of data{list(data.shape)} over {axes} gives "
             f"{remaining} elements; dst{list(dst.shape)} has {dst.size}")
    _trace.current().record("tensor_reduce", [dst, data], alu=[alu], axes=sorted(set(axes)),
                            flags=[negate, keepdims])


def tensor_copy_predicated(dst, src, predicate, reverse_pred=False, name=None):
    """dst = src where predicate is nonzero (zero with reverse_pred); dst
    keeps its values elsewhere."""
    for tile, what in ((dst, "dst"), (src, "src"), (predicate, "predicate")):
        _on_chip(tile, what, "tensor_copy_predicated")
    _partitions_match("tensor_copy_predicated", dst=dst, src=src, predicate=predicate)
    _elements_match("tensor_copy_predicated", dst, src)
    _elements_match("tensor_copy_predicated", dst, predicate, "predicate")
    if reverse_pred:
        inverted = _trace_new_tile(predicate)
        tensor_scalar(inverted, predicate, _EQUAL, 0.0)
        predicate = inverted
    _trace.current().record("tensor_copy_predicated", [dst, src, predicate])


class _EqualOperator:
    alu = "equal"


_EQUAL = _EqualOperator()


def _trace_new_tile(like):
    from nki import language
    return language.ndarray(like.shape, torch.float32, language.sbuf)


def iota(dst, pattern, offset=0, channel_multiplier=0, name=None):
    """dst[p, f...] = offset + channel_multiplier * p + sum(step_k * f_k):
    `pattern` is [[step, count], ...] over dst's free dimensions."""
    _on_chip(dst, "dst", "iota")
    if dst._allocation.space != "sbuf":
        fail("err_unsupported_memory", "iota writes SBUF")
    pattern = [tuple(pair) for pair in pattern]
    if [count for _, count in pattern] != list(dst.shape[1:]):
        fail("err_shape_mismatch", f"iota's pattern {pattern} does not cover dst"
             f"{list(dst.shape)}'s free dimensions")
    _trace.current().record("iota", [dst], scalars=[offset, channel_multiplier],
                            axes=[step for step, _ in pattern])

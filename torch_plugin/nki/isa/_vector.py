"""The Vector and Scalar engines' arithmetic: elementwise instructions
(tensor_tensor, tensor_scalar, scalar_tensor_tensor, activation and its
variants), reductions along the free dimensions or across partitions, and
scans. Arithmetic runs in float32; each result is rounded to its
destination's dtype."""

from nki import _trace
from nki._errors import fail
from nki.isa._accumulators import reduce_flags
from nki.isa._checks import (activation_function, alu, check_space, elements_match, engine_view,
                             partitions_match, per_partition)

_REDUCERS = ("add", "multiply", "maximum", "minimum")


def tensor_tensor(dst, data1, data2, op, engine=None, name=None):
    """dst = op(data1, data2), element by element."""
    dst = engine_view(dst, "dst", "tensor_tensor")
    data1 = engine_view(data1, "data1", "tensor_tensor")
    data2 = engine_view(data2, "data2", "tensor_tensor")
    if data1._allocation.space == "psum" and data2._allocation.space == "psum":
        fail("err_unsupported_memory", "'tensor_tensor' cannot read both data1 and data2 from "
             "PSUM")
    partitions_match("tensor_tensor", dst=dst, data1=data1, data2=data2)
    if data1.size != data2.size:
        fail("err_shape_mismatch", f"'tensor_tensor' data1{list(data1.shape)} and "
             f"data2{list(data2.shape)} differ")
    elements_match("tensor_tensor", dst, data1, "data1")
    _trace.current().record("tensor_tensor", [dst, data1, data2],
                            alu=[alu(op, "tensor_tensor")])


def tensor_scalar(dst, data, op0, operand0, reverse0=False, op1=None, operand1=None,
                  reverse1=False, engine=None, name=None):
    """dst = op1(op0(data, operand0), operand1): operands are numbers or one
    value per partition ([P, 1] tiles); reverseN swaps the operands."""
    dst = engine_view(dst, "dst", "tensor_scalar")
    data = engine_view(data, "data", "tensor_scalar")
    partitions_match("tensor_scalar", dst=dst, data=data)
    elements_match("tensor_scalar", dst, data, "data")
    tile0, value0 = per_partition(operand0, data, "operand0", "tensor_scalar")
    ops = [alu(op0, "tensor_scalar", "op0"), None]
    tile1, value1 = None, 0.0
    if op1 is not None:
        tile1, value1 = per_partition(operand1, data, "operand1", "tensor_scalar")
        ops[1] = alu(op1, "tensor_scalar", "op1")
    _trace.current().record("tensor_scalar", [dst, data, tile0, tile1], alu=ops,
                            scalars=[value0, value1], flags=[reverse0, reverse1])


def activation(dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None,
               reduce_cmd=None, name=None):
    """dst = op(data * scale + bias) on the Scalar engine; with reduce_res,
    also reduce_op of the results along the free dimensions, per partition."""
    function = activation_function(op, "activation")
    dst = engine_view(dst, "dst", "activation")
    data = engine_view(data, "data", "activation")
    partitions_match("activation", dst=dst, data=data)
    elements_match("activation", dst, data, "data")
    bias_tile = None
    if bias is not None:
        bias_tile, bias_value = per_partition(bias, data, "bias", "activation")
        if bias_tile is None:
            # A number: the same bias on every partition.
            bias_tile = _constant_column(data, bias_value)
    scale_tile, scale_value = per_partition(scale, data, "scale", "activation")
    ops = [None]
    reduce_view = None
    # A reduce command other than idle works the Scalar engine's accumulator;
    # without one, reduce_res receives this instruction's reduction alone.
    flags = reduce_flags(reduce_cmd)
    flags = flags if any(flags) else []
    if reduce_res is not None or flags:
        if reduce_res is not None:
            reduce_view, _ = per_partition(reduce_res, data, "reduce_res", "activation")
        ops = [alu(reduce_op if reduce_op is not None else _ADD, "activation", "reduce_op")]
    elif reduce_op is not None:
        fail("err_invalid_operand", "activation's reduce_op needs reduce_res")
    _trace.current().record("activation", [dst, data, bias_tile, scale_tile, reduce_view],
                            writes=(0, 4), alu=ops, activation=function,
                            scalars=[scale_value if scale_tile is None else 1.0], flags=flags)


def activation_reduce(dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None):
    """activation with its free-dimension reduction into reduce_res."""
    activation(dst, op, data, bias=bias, scale=scale, reduce_op=reduce_op,
               reduce_res=reduce_res)


def _constant_column(data, value):
    from nki import _nl_memory
    column = _nl_memory.ndarray((data.shape[0], 1), "float32")
    from nki.isa._move import memset
    memset(column, value)
    return column


class _AddOperator:
    alu = "add"


_ADD = _AddOperator()


class _ReciprocalFunction:
    act = "reciprocal"


def reciprocal(dst, data, engine=None, name=None):
    """dst = 1 / data."""
    activation(dst, _ReciprocalFunction, data)


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None):
    """dst = op over `axis` (free dimensions of data), per partition; negate
    multiplies the result by -1."""
    dst_view = engine_view(dst, "dst", "tensor_reduce")
    data_view = engine_view(data, "data", "tensor_reduce")
    partitions_match("tensor_reduce", dst=dst_view, data=data_view)
    operator = alu(op, "tensor_reduce")
    if operator not in _REDUCERS:
        fail("err_unsupported_operator", f"tensor_reduce reduces with add, multiply, maximum or "
             f"minimum, not {operator}")
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(_engine_axis(data, a + data.ndim if a < 0 else a) for a in axes)
    for a in axes:
        if not 1 <= a < data_view.ndim:
            fail("err_unsupported_reduce_axis", f"tensor_reduce: axis {a} is not a free "
                 f"dimension of data{list(data_view.shape)} (the partition dimension 0 cannot "
                 "be reduced)")
    remaining = 1
    for d, s in enumerate(data_view.shape):
        if d not in axes:
            remaining *= s
    if dst_view.size != remaining:
        fail("err_shape_mismatch", f"tensor_reduce of data{list(data_view.shape)} over {axes} "
             f"gives {remaining} elements; dst{list(dst_view.shape)} has {dst_view.size}")
    _trace.current().record("tensor_reduce", [dst_view, data_view], alu=[operator],
                            axes=sorted(set(axes)), flags=[negate, keepdims],
                            mask_dims={0: {0: 0}})


def _engine_axis(tensor, axis):
    """Where logical dimension `axis` of `tensor` lands with its partition
    dimension first."""
    partition = tensor.partition_dim or 0
    if axis == partition:
        return 0
    return axis + 1 if axis < partition else axis


def _columns(operand, data, what, instruction):
    """(tile, number) of a scalar-or-[P, 1] operand, None as 0."""
    if operand is None:
        return None, 0.0
    return per_partition(operand, data, what, instruction)


def tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False,
                       name=None):
    """Along each partition's free elements: r = op1(op0(data0[i], r),
    data1[i]) from r = initial (a number or [P, 1]); dst[i] = r."""
    dst = engine_view(dst, "dst", "tensor_tensor_scan")
    data0 = engine_view(data0, "data0", "tensor_tensor_scan")
    data1 = engine_view(data1, "data1", "tensor_tensor_scan")
    partitions_match("tensor_tensor_scan", dst=dst, data0=data0, data1=data1)
    if data0._allocation.space == "psum" and data1._allocation.space == "psum":
        fail("err_unsupported_memory", "'tensor_tensor_scan' cannot read both data0 and data1 "
             "from PSUM")
    elements_match("tensor_tensor_scan", dst, data0, "data0")
    elements_match("tensor_tensor_scan", data1, data0, "data0")
    initial_tile, initial_value = per_partition(initial, data0, "initial", "tensor_tensor_scan")
    _trace.current().record("tensor_tensor_scan", [dst, data0, data1, initial_tile],
                            alu=[alu(op0, "tensor_tensor_scan", "op0"),
                                 alu(op1, "tensor_tensor_scan", "op1")],
                            scalars=[initial_value], flags=[reverse0, reverse1])


def tensor_scalar_cumulative(dst, src, op0, op1, imm0, imm1=None, reduce_cmd="reset_reduce",
                             name=None):
    """With the Vector engine's accumulator a: a = op1(op0(src[i], imm0), a)
    and dst[i] = a along each partition's free elements; reduce_cmd resets
    a (reset_reduce), continues it (reduce) or loads imm1 (load_reduce)."""
    dst = engine_view(dst, "dst", "tensor_scalar_cumulative")
    src = engine_view(src, "src", "tensor_scalar_cumulative")
    partitions_match("tensor_scalar_cumulative", dst=dst, src=src)
    elements_match("tensor_scalar_cumulative", dst, src)
    operator = alu(op1, "tensor_scalar_cumulative", "op1")
    if operator not in ("add", "subtract", "multiply", "maximum", "minimum"):
        fail("err_unsupported_operator", "tensor_scalar_cumulative accumulates with add, "
             f"subtract, multiply, maximum or minimum, not {operator}")
    tile0, value0 = per_partition(imm0, src, "imm0", "tensor_scalar_cumulative")
    tile1, value1 = _columns(imm1, src, "imm1", "tensor_scalar_cumulative")
    _trace.current().record("tensor_scalar_cumulative", [dst, src, tile0, tile1],
                            alu=[alu(op0, "tensor_scalar_cumulative", "op0"), operator],
                            scalars=[value0, value1], flags=reduce_flags(reduce_cmd))


def tensor_partition_reduce(dst, op, data, name=None):
    """dst [1, F...] = op over data's partitions (GpSimd engine)."""
    dst = engine_view(dst, "dst", "tensor_partition_reduce")
    data = engine_view(data, "data", "tensor_partition_reduce")
    operator = alu(op, "tensor_partition_reduce")
    if operator not in ("add", "maximum", "minimum", "bitwise_or", "bitwise_and", "average"):
        fail("err_unsupported_operator", "tensor_partition_reduce reduces with add, average, "
             f"maximum, bitwise_or or bitwise_and, not {operator}")
    if dst.shape[0] != 1 or dst.size * data.shape[0] != data.size:
        fail("err_shape_mismatch", f"tensor_partition_reduce of data{list(data.shape)} gives one "
             f"partition of {data.size // data.shape[0]}; dst is {list(dst.shape)}")
    for tile, what in ((dst, "dst"), (data, "data")):
        check_space(tile, what, "tensor_partition_reduce", "sbuf")
    _trace.current().record("tensor_partition_reduce", [dst, data], alu=[operator])


def scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False,
                         name=None):
    """dst = op1(op0(data, operand0), operand1): operand0 a number or
    [P, 1], operand1 a tile of data's shape."""
    dst = engine_view(dst, "dst", "scalar_tensor_tensor")
    data = engine_view(data, "data", "scalar_tensor_tensor")
    operand1 = engine_view(operand1, "operand1", "scalar_tensor_tensor")
    partitions_match("scalar_tensor_tensor", dst=dst, data=data, operand1=operand1)
    elements_match("scalar_tensor_tensor", dst, data, "data")
    elements_match("scalar_tensor_tensor", operand1, data, "data")
    if data._allocation.space == "psum" and operand1._allocation.space == "psum":
        fail("err_unsupported_memory", "'scalar_tensor_tensor' cannot read both data and "
             "operand1 from PSUM")
    tile0, value0 = per_partition(operand0, data, "operand0", "scalar_tensor_tensor")
    _trace.current().record("scalar_tensor_tensor", [dst, data, tile0, operand1],
                            alu=[alu(op0, "scalar_tensor_tensor", "op0"),
                                 alu(op1, "scalar_tensor_tensor", "op1")],
                            scalars=[value0], flags=[reverse0, reverse1])


def tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res=None, reverse0=False,
                         reduce_cmd="reset_reduce", reduce_init=None, reduce_res_negate=False,
                         name=None):
    """dst = op0(data, operand0); the Vector engine's accumulator folds each
    partition's reduce_op of dst (reduce_cmd); reduce_res = it (negated
    with reduce_res_negate)."""
    dst = engine_view(dst, "dst", "tensor_scalar_reduce")
    data = engine_view(data, "data", "tensor_scalar_reduce")
    partitions_match("tensor_scalar_reduce", dst=dst, data=data)
    elements_match("tensor_scalar_reduce", dst, data, "data")
    operator = alu(reduce_op, "tensor_scalar_reduce", "reduce_op")
    if operator not in ("add", "subtract", "multiply", "maximum", "minimum"):
        fail("err_unsupported_operator", "tensor_scalar_reduce reduces with add, multiply, "
             f"maximum or minimum, not {operator}")
    tile0, value0 = per_partition(operand0, data, "operand0", "tensor_scalar_reduce")
    result = per_partition(reduce_res, data, "reduce_res", "tensor_scalar_reduce")[0] \
        if reduce_res is not None else None
    init_tile, init_value = _columns(reduce_init, data, "reduce_init", "tensor_scalar_reduce")
    _trace.current().record("tensor_scalar_reduce", [dst, data, tile0, result, init_tile],
                            writes=(0, 3), alu=[alu(op0, "tensor_scalar_reduce", "op0"), operator],
                            scalars=[value0, init_value],
                            flags=[reverse0, reduce_res_negate] + reduce_flags(reduce_cmd))


def exponential(dst, src, max_value=0.0, reduce_res=None, reduce_cmd="idle", reduce_init=0.0,
                name=None):
    """dst = exp(src - max_value) (a number or [P, 1]); the Vector engine's
    accumulator sums dst (reduce_cmd); reduce_res = it."""
    dst = engine_view(dst, "dst", "exponential")
    src = engine_view(src, "src", "exponential")
    partitions_match("exponential", dst=dst, src=src)
    elements_match("exponential", dst, src)
    max_tile, max_number = per_partition(max_value, src, "max_value", "exponential")
    result = per_partition(reduce_res, src, "reduce_res", "exponential")[0] \
        if reduce_res is not None else None
    init_tile, init_value = _columns(reduce_init, src, "reduce_init", "exponential")
    _trace.current().record("exponential", [dst, src, max_tile, result, init_tile],
                            writes=(0, 3), scalars=[max_number, init_value],
                            flags=reduce_flags(reduce_cmd))


def bn_stats(dst, data, name=None):
    """dst [P, 6]: per half of each partition's elements (even, odd
    indices): count, mean, and variance times count."""
    dst = engine_view(dst, "dst", "bn_stats")
    data = engine_view(data, "data", "bn_stats")
    partitions_match("bn_stats", dst=dst, data=data)
    if data.size // data.shape[0] > _BN_STATS_FMAX:
        fail("err_size_of_dimension_exceed_arch_limit", f"bn_stats reads at most "
             f"{_BN_STATS_FMAX} elements per partition (nl.tile_size.bn_stats_fmax); data"
             f"{list(data.shape)}")
    if dst.size != 6 * dst.shape[0]:
        fail("err_shape_mismatch", f"bn_stats writes 6 values per partition; dst is "
             f"{list(dst.shape)}")
    _trace.current().record("bn_stats", [dst, data])


_BN_STATS_FMAX = 512


def bn_aggr(dst, data, name=None):
    """dst [P, 2] = the mean and variance of the elements bn_stats described
    in data (count, mean, variance * count triples)."""
    dst = engine_view(dst, "dst", "bn_aggr")
    data = engine_view(data, "data", "bn_aggr")
    partitions_match("bn_aggr", dst=dst, data=data)
    if (data.size // data.shape[0]) % 3 or dst.size != 2 * dst.shape[0]:
        fail("err_shape_mismatch", f"bn_aggr reads triples and writes 2 values per partition; "
             f"data{list(data.shape)}, dst{list(dst.shape)}")
    _trace.current().record("bn_aggr", [dst, data])

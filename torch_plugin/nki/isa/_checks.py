"""The operand rules every nki.isa instruction checks while it is traced:
tensors of the kernel, memory spaces, partition and element counts,
operators and per-partition operands. Each violation raises
NkiValidationError with the compiler's code."""

import numbers

from nki._errors import fail
from nki._tensor import NkiTensor


def check_tensor(value, what, instruction):
    if not isinstance(value, NkiTensor):
        fail("err_invalid_operand", f"operand '{what}' of '{instruction}' must be a tensor of "
             f"the kernel, not {type(value).__name__}")
    return value


def check_on_chip(value, what, instruction):
    check_tensor(value, what, instruction)
    if not value._allocation.on_chip:
        fail("err_unsupported_memory", f"Expected operand '{what}' of '{instruction}' to be in "
             f"address space 'sbuf' or 'psum', but got a tile in 'hbm' instead.")
    return value


def engine_view(value, what, instruction):
    """An on-chip operand as an engine walks it: partitions first."""
    return check_on_chip(value, what, instruction).compute_view()


def check_space(value, what, instruction, *spaces):
    if value._allocation.space not in spaces:
        fail("err_unsupported_memory", f"Expected operand '{what}' of '{instruction}' to be in "
             f"address space {' or '.join(repr(s) for s in spaces)}, but got a tile in "
             f"'{value._allocation.space}' instead.")


def partitions_match(instruction, **tiles):
    counts = {name: tile.shape[0] for name, tile in tiles.items() if tile is not None}
    if len(set(counts.values())) > 1:
        described = ", ".join(f"{name}{list(tiles[name].shape)}" for name in counts)
        fail("err_num_partition_mismatch", "number of partitions (dimension 0 size of a tile) "
             f"mismatch in parameters ({described}) of '{instruction}'")


def elements_match(instruction, dst, src, src_name="src"):
    if dst.size != src.size:
        fail("err_shape_mismatch", f"'{instruction}' writes {src.size} elements "
             f"({src_name}{list(src.shape)}) into dst{list(dst.shape)} of {dst.size}")


def alu(op, instruction, what="op"):
    """The ALU operator's name `op` gives (an nl function, or NumPy's)."""
    from nki._nl_math import operator_of
    name = getattr(operator_of(op), "alu", None)
    if name is None:
        fail("err_unsupported_operator", f"{what}={op!r} of '{instruction}' is not an "
             "arithmetic operator (nl.add, nl.multiply, nl.maximum, ...)")
    return name


def activation_function(op, instruction):
    from nki._nl_math import operator_of
    name = getattr(operator_of(op), "act", None)
    if name is None:
        fail("err_unsupported_activation", f"op={op!r} of '{instruction}' is not an activation "
             "function (nl.exp, nl.tanh, nl.copy, ...)")
    return name


def per_partition(value, data, what, instruction):
    """A scalar operand: (tile, 0.0) for one value per partition ([P, 1]),
    or (None, value) for a number."""
    if isinstance(value, NkiTensor):
        value = engine_view(value, what, instruction)
        if value.shape[0] != data.shape[0] or value.size != value.shape[0]:
            if value.size == 1 and value.shape[0] == 1:
                # One value for every partition: repeated across them.
                return value.broadcast_to((data.shape[0],) + value.shape[1:]), 0.0
            fail("err_shape_mismatch", f"operand '{what}' of '{instruction}' must be "
                 f"[{data.shape[0]}, 1] (one value per partition); got {list(value.shape)}")
        return value, 0.0
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return None, float(value)
    fail("err_invalid_operand", f"operand '{what}' of '{instruction}' must be a number or a "
         f"[P, 1] tile, not {type(value).__name__}")

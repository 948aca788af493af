"""nki.isa's registers (register_alloc, register_move, register_store) and
the dynamic loops over them. Where a register's value is known while
tracing (set from constants or other known registers), loops over it
unroll, as every loop here does; a value read from a tensor at run time
(register_load) drives control flow the simulated core does not run."""

from nki._errors import fail, unsupported, unsupported_api

register_load = unsupported_api("nisa.register_load", "a register loaded from a tensor at run "
                                "time drives control flow the simulated core does not run")


class VirtualRegister:
    """A 32-bit register of an engine's sequencer; `value` is known while
    tracing, or None."""

    def __init__(self, value=None):
        self.value = value

    def __repr__(self):
        return f"VirtualRegister({self.value})"

    def __index__(self):
        return known(self, "a register used as a number")

    def __bool__(self):
        fail("err_unsupported_control_flow", "a register cannot drive Python control flow; use "
             "nl.while_loop")


def known(value, what):
    """The integer value of an int or a register known while tracing."""
    if isinstance(value, VirtualRegister):
        if value.value is None:
            unsupported(what, "the register's value is read from a tensor at run time")
        return int(value.value)
    return int(value)


def register_alloc(x=None):
    return VirtualRegister(None if x is None else int(x))


def register_move(dst, src):
    if not isinstance(dst, VirtualRegister):
        fail("err_invalid_operand", "register_move's dst is a register (nisa.register_alloc)")
    dst.value = known(src, "nisa.register_move") if not (
        isinstance(src, VirtualRegister) and src.value is None) else None


def register_store(dst, src):
    from nki.isa._move import memset
    memset(dst, known(src, "nisa.register_store"))

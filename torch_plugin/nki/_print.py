"""nl.device_print: a tensor's values as the kernel runs. The trace copies
the tensor into an HBM tensor of the kernel's own (role "print") at that
point of the program; after a launch (on the device or in nki.simulate)
the client prints each with its prefix, in program order."""

import sys

from nki import _trace
from nki._errors import fail
from nki._tensor import NkiTensor


def device_print(prefix, tensor):
    from nki import _nl_memory, isa as nisa
    if not isinstance(tensor, NkiTensor):
        fail("err_invalid_operand", f"nl.device_print prints a tensor of the kernel, not "
             f"{type(tensor).__name__}")
    source = tensor
    if source._allocation.space == "psum":
        source = _nl_memory.copy(source)
    copy = _nl_memory.ndarray(source.shape, source.dtype, _trace.hbm, name=f"print:{prefix}")
    copy._allocation.role = "print"
    nisa.dma_copy(copy, source)


def print_values(traced, hbm):
    """Prints the kernel's device_print tensors from its launch buffers."""
    for allocation in traced.trace.allocations:
        if allocation.role != "print":
            continue
        values = hbm[allocation.address_index]
        prefix = allocation.name.removeprefix("print:")
        print(f"{prefix} {values.cpu().reshape(allocation.shape)}", file=sys.stdout)

"""torch_neuronx.nki_op: a PyTorch custom operator whose implementation
calls NKI kernels.

    @nki_op("mylib::pt_nki_sin", mutates_args={})
    def pt_nki_sin(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        sin_kernel(x, out)
        return out

It is torch.library.custom_op with the function as both the device
implementation and the fake one: on neuron tensors the kernels launch on the
current stream; under FakeTensorMode (torch.compile, AOTAutograd) the same
function runs with fake tensors and the kernels are only traced, so shapes
come out and kernel errors (NkiValidationError) are raised at compile time.
The result is a CustomOpDef: register_autograd, register_kernel and
register_fake work as for any custom operator.

Under torch.compile(backend="neuron") the neuron backend expands each such
operator into its function's ATen operators and one `neuron_nki::call` per
kernel call (torch_neuronx/_dynamo/_nki_expansion.py); the graph executable
then carries the traced kernels and runs them as nodes.
"""

import torch

__all__ = ["nki_op"]

# The function behind each nki_op's operator overload.
_FUNCTIONS = {}
# Traced kernels that neuron_nki::call names by index; one entry per traced
# specialization.
_KERNELS = []
_KERNEL_INDEX = {}


def nki_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None):
    """Makes `fn` the custom operator `name` ("namespace::name"); usable as a
    decorator. `mutates_args` as torch.library.custom_op's (the tensors the
    function writes in place, or {})."""

    def make(function):
        op = torch.library.custom_op(name, function, mutates_args=mutates_args,
                                     device_types=device_types, schema=schema)
        op.register_fake(function)
        if not mutates_args:
            _FUNCTIONS[op._opoverload] = function
        return op

    return make if fn is None else make(fn)


def function_of(target):
    """The Python function of an nki_op's operator overload (one that
    mutates nothing), or None."""
    return _FUNCTIONS.get(target)


def kernel_index(traced):
    """The index neuron_nki::call names `traced` by."""
    index = _KERNEL_INDEX.get(id(traced))
    if index is None:
        index = _KERNEL_INDEX[id(traced)] = len(_KERNELS)
        _KERNELS.append(traced)
    return index


def traced_kernel(index):
    return _KERNELS[index]


@torch.library.custom_op("neuron_nki::call", mutates_args=())
def nki_call(kernel: int, args: list[torch.Tensor]) -> list[torch.Tensor]:
    """Runs traced kernel `kernel` on `args` (bound to its HBM arguments, in
    order); returns the HBM tensors it writes, in address order (an argument
    it writes is copied first)."""
    return _KERNELS[kernel].call(args)


@nki_call.register_fake
def _nki_call_fake(kernel, args):
    device = args[0].device if args else torch.device("meta")
    return [torch.empty(allocation.shape, dtype=allocation.dtype, device=device)
            for allocation in _KERNELS[kernel].written_allocations]

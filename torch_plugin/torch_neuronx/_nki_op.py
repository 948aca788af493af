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
"""

import torch

__all__ = ["nki_op"]


def nki_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None):
    """Makes `fn` the custom operator `name` ("namespace::name"); usable as a
    decorator. `mutates_args` as torch.library.custom_op's (the tensors the
    function writes in place, or {})."""

    def make(function):
        op = torch.library.custom_op(name, function, mutates_args=mutates_args,
                                     device_types=device_types, schema=schema)
        op.register_fake(function)
        return op

    return make if fn is None else make(fn)

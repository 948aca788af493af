"""The first operator of a process without `import torch._dynamo`.

Every new operator signature on `neuron` runs meta inference, and many of
PyTorch's meta kernels are Python functions (`torch._refs.add`, ...) wrapped
in `torch._disable_dynamo`, which imports torch._dynamo (about two seconds)
on the function's first call so that Dynamo will not trace it. A process
that never compiles has no Dynamo to hide the function from, so until
torch._dynamo is imported these wrappers call the function directly; once it
is imported (torch.compile, or anything else), the first call makes the
disabled function as PyTorch would, and keeps it.
"""

import sys

import torch
import torch._compile
import torch._decomp


class _DisableOnceDynamoIsLoaded:
    """What `torch._disable_dynamo` caches on the function it wraps."""

    def __init__(self, fn, recursive):
        self._fn = fn
        self._recursive = recursive

    def __call__(self, *args, **kwargs):
        if "torch._dynamo" not in sys.modules:
            return self._fn(*args, **kwargs)
        disabled = sys.modules["torch._dynamo"].disable(self._fn, self._recursive, wrapping=False)
        # setattr: a name with two leading underscores would be mangled here.
        setattr(self._fn, "__dynamo_disable", disabled)
        return disabled(*args, **kwargs)


def _disable_dynamo_code():
    return torch._compile._disable_dynamo(lambda: None).__code__


def defer_dynamo_import():
    """Pre-fills the cache of every `_disable_dynamo` wrapper among the
    decomposition and meta tables' functions (the Python meta kernels)."""
    code = _disable_dynamo_code()
    seen = set()
    for table in torch._decomp.global_decomposition_table.values():
        for function in table.values():
            while callable(function) and id(function) not in seen:
                seen.add(id(function))
                if getattr(function, "__code__", None) is code:
                    cells = dict(zip(code.co_freevars, function.__closure__))
                    wrapped = cells["fn"].cell_contents
                    if getattr(wrapped, "__dynamo_disable", None) is None:
                        wrapped.__dynamo_disable = _DisableOnceDynamoIsLoaded(
                            wrapped, cells["recursive"].cell_contents)
                function = getattr(function, "__wrapped__", None)

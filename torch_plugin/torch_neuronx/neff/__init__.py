"""Compiled NEFFs on real Trainium: ``torch_neuronx.neff.load(path_or_bytes)``
gives a module that runs the NEFF on ``neuron`` tensors, one launch on the
current stream, asynchronously like an eager operator.

The NEFF (from ``neuronx-cc compile ... --target trn2``, or a framework's
compile cache) is loaded into neuron-rtd once per host: a second process
loading the same bytes reuses it. Only a daemon on real Trainium (its ``nrt``
backend) runs NEFFs; the simulated device refuses them, saying so.

    module = torch_neuronx.neff.load("model.neff")
    out = module(x, y)                  # inputs in the NEFF's order...
    out = module(input0=x, input1=y)    # ...or by name
    module.inputs, module.outputs       # [NeffTensorInfo(name, shape, dtype, size_bytes)]

The module returns its output tensor, or a tuple of them in the NEFF's order
when there are several (``module.outputs`` names them).
"""

import os
from typing import NamedTuple

import torch

from torch_neuronx import _C

__all__ = ["NeffModule", "NeffTensorInfo", "load"]


class NeffTensorInfo(NamedTuple):
    name: str
    shape: tuple
    # None when PyTorch has no type for the NEFF's (the tensor is passed as
    # its bytes: torch.uint8 of size_bytes).
    dtype: "torch.dtype | None"
    size_bytes: int


class NeffModule(torch.nn.Module):
    """A loaded NEFF as a module. Its parameters, if any, are the NEFF's:
    every tensor it reads is an input of the call."""

    def __init__(self, neff, device):
        super().__init__()
        self._neff = neff
        self._device = device
        self._launched = False
        self.inputs, self.outputs = [], []
        for name, is_input, size_bytes, shape, dtype in neff.tensors:
            info = NeffTensorInfo(name, tuple(shape), dtype, size_bytes)
            (self.inputs if is_input else self.outputs).append(info)
        self._input_names = [info.name for info in self.inputs]

    @property
    def name(self):
        return self._neff.name

    def _by_name(self, kwargs):
        names = self._input_names
        unknown = sorted(set(kwargs) - set(names))
        missing = [name for name in names if name not in kwargs]
        if unknown or missing:
            raise TypeError(f"NEFF '{self.name}' takes inputs {names}; "
                            f"unknown {unknown}, missing {missing}")
        return [kwargs[name] for name in names]

    def forward(self, *args, **kwargs):
        if kwargs:
            if args:
                raise TypeError(f"NEFF '{self.name}' takes its inputs by position or by name, "
                                "not both")
            args = self._by_name(kwargs)
        outputs = _C._run_neff(self._neff, args, self._device, not self._launched)
        if not self._launched:
            self._launched = True
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def extra_repr(self):
        return f"'{self.name}', inputs={[i.name for i in self.inputs]}, " \
               f"outputs={[o.name for o in self.outputs]}"


def load(neff, name=None, device=None):
    """Loads a NEFF (a path, or its bytes) for neuron device `device` (the
    current one by default) and returns it as a NeffModule."""
    if isinstance(neff, (str, os.PathLike)):
        path = os.fspath(neff)
        with open(path, "rb") as handle:
            data = handle.read()
        name = name or os.path.basename(path)
    elif isinstance(neff, (bytes, bytearray, memoryview)):
        data = bytes(neff)
        name = name or "neff"
    else:
        raise TypeError(f"torch_neuronx.neff.load takes a path or bytes, not {type(neff).__name__}")
    if device is None:
        index = torch.neuron.current_device()
    else:
        device = torch.device(device) if isinstance(device, (str, torch.device)) \
            else torch.device("neuron", device)
        if device.type != "neuron":
            raise ValueError(f"a NEFF runs on a neuron device, not {device}")
        index = device.index if device.index is not None else torch.neuron.current_device()
    return NeffModule(_C._load_neff(data, name), index)

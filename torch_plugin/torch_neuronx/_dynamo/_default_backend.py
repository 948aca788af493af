"""torch.compile's default backend on neuron graphs.

``torch.compile(model)`` (and ``model.compile()``, ``backend="inductor"``)
hands each graph Dynamo captures to TorchInductor, which generates Triton or
C++ for the devices it knows and has no code generator for ``neuron``.
Graphs whose tensors are on ``neuron`` go to the ``neuron`` backend instead;
every other graph (CPU, other devices) goes to TorchInductor exactly as
without this package. PyTorch offers no per-device default backend, so the
routing wraps ``torch._TorchCompileInductorWrapper.__call__``, the one place
every such graph passes with its example inputs; importing this module does
not import Dynamo.
"""

import functools
import itertools
import logging

import torch

_log = logging.getLogger("torch_neuronx")
_announced = False


def _on_neuron(value):
    return isinstance(value, torch.Tensor) and value.device.type == "neuron"


def touches_neuron(gm, example_inputs):
    """Whether the graph reads or makes a ``neuron`` tensor: an input, a
    parameter or buffer of the graph module, or a value a node produces."""
    if any(_on_neuron(value) for value in itertools.chain(example_inputs, gm.parameters(),
                                                          gm.buffers())):
        return True
    for node in gm.graph.nodes:
        value = node.meta.get("example_value", node.meta.get("val"))
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if _on_neuron(item):
                return True
    return False


def route_neuron_graphs():
    """Makes torch.compile's default backend compile ``neuron`` graphs with
    the ``neuron`` backend. Idempotent; a torch without the wrapper keeps
    TorchInductor's refusal (torch_neuronx/_dynamo/_inductor_refusal.py)."""
    wrapper = getattr(torch, "_TorchCompileInductorWrapper", None)
    if wrapper is None or getattr(wrapper.__call__, "_routes_neuron_graphs", False):
        return
    inductor_call = wrapper.__call__

    @functools.wraps(inductor_call)
    def __call__(self, model_, inputs_, **kwargs):
        if not touches_neuron(model_, inputs_):
            return inductor_call(self, model_, inputs_, **kwargs)
        global _announced
        if not _announced:
            _announced = True
            _log.warning("torch.compile: graphs on neuron compile with the neuron backend "
                         "(TorchInductor has no neuron code generator)")
        from torch_neuronx._dynamo import compile_for_neuron

        return compile_for_neuron(model_, inputs_, inductor_config=self.config)

    __call__._routes_neuron_graphs = True
    wrapper.__call__ = __call__

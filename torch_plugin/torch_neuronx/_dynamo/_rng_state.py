"""Random operators in activation-checkpointed regions of a graph.

AOTAutograd wraps a random operator that a checkpointed region recomputes
in `run_and_save_rng_state` (forward: save the generator's state, run the
operator) and `run_with_rng_state` (backward: run it again from that state),
so the recomputation draws the same numbers. PyTorch 2.13 implements both
higher-order operators only for CPU, CUDA, HPU and XPU tensors: on `neuron`
they raise "Backend not supported for neuron" (TorchTitan's selective
activation checkpointing under torch.compile hits it at the first step).
rewrite() puts in their place the same steps on the `neuron` generator;
the graph runs them on the client, the operator through the device's
eager path.
"""

import torch


def _neuron_index(args):
    for value in args:
        if isinstance(value, torch.Tensor) and value.device.type == "neuron":
            return value.device.index or 0
    return None


def run_and_save_rng_state(op, *args, **kwargs):
    index = _neuron_index(args)
    if index is None:
        return torch.ops.higher_order.run_and_save_rng_state(op, *args, **kwargs)
    return torch.neuron.get_rng_state(index), op(*args, **kwargs)


def run_with_rng_state(rng_state, op, *args, **kwargs):
    index = _neuron_index(args)
    if index is None:
        return torch.ops.higher_order.run_with_rng_state(rng_state, op, *args, **kwargs)
    current = torch.neuron.get_rng_state(index)
    torch.neuron.set_rng_state(rng_state, index)
    try:
        return op(*args, **kwargs)
    finally:
        torch.neuron.set_rng_state(current, index)


_REPLACEMENTS = {
    torch.ops.higher_order.run_and_save_rng_state: run_and_save_rng_state,
    torch.ops.higher_order.run_with_rng_state: run_with_rng_state,
}


def rewrite(gm):
    """Replaces the two higher-order operators in `gm`, in place."""
    replaced = False
    for node in gm.graph.nodes:
        replacement = node.op == "call_function" and _REPLACEMENTS.get(node.target)
        if replacement:
            node.target = replacement
            replaced = True
    if replaced:
        gm.recompile()

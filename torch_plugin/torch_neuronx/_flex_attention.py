"""FlexAttention on the neuron device.

``torch.nn.attention.flex_attention`` checks its inputs' device against a
fixed list (CUDA, CPU, XPU, HPU, MPS) and refuses every other device,
including an out-of-tree one that can run it: its higher-order operator's
dense implementation is plain ATen arithmetic, which the neuron device
runs (eagerly, and inside graphs compiled with ``backend="neuron"``).
This lets neuron tensors through that check and leaves every other device
to it.
"""

import functools

import torch.nn.attention.flex_attention as _flex_attention


def enable():
    check = _flex_attention._validate_device
    if getattr(check, "_neuron_allowed", False):
        return

    @functools.wraps(check)
    def validate_device(query, key, value):
        if query.device.type == "neuron":
            return None
        return check(query, key, value)

    validate_device._neuron_allowed = True
    _flex_attention._validate_device = validate_device

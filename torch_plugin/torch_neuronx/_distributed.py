"""The c10d backend ``neuron`` (see docs/distributed.md).

Registered when torch_neuronx is imported: ``init_process_group("neuron")``,
``init_process_group()`` (neuron tensors go to ``neuron``, CPU tensors to
gloo) and ``init_device_mesh("neuron", ...)``.
"""

import torch.distributed as _dist

BACKEND_NAME = "neuron"


def _create_backend(dist_backend_opts, backend_options):
    from torch_neuronx import _C

    return _C._create_neuron_backend(
        dist_backend_opts.store,
        dist_backend_opts.group_rank,
        dist_backend_opts.group_size,
        dist_backend_opts.timeout,
    )


def register():
    if not _dist.is_available() or BACKEND_NAME.upper() in _dist.Backend._plugins:
        return
    _dist.Backend.register_backend(
        BACKEND_NAME, _create_backend, extended_api=True, devices=[BACKEND_NAME]
    )


def communicator_name(group=None):
    """The daemon communicator behind ``group``'s neuron backend, as
    ``neuronctl groups`` lists it."""
    from torch_neuronx import _C

    group = group or _dist.distributed_c10d._get_default_group()
    backend = group._get_backend(_dist.distributed_c10d.torch.device(BACKEND_NAME))
    return _C._neuron_backend_communicator(backend)

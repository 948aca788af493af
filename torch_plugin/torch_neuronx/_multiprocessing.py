"""``neuron`` tensors through ``torch.multiprocessing``, as CUDA tensors go.

A neuron storage is pickled (for a queue, a pipe, a ``Process`` argument) as
a handle to its device memory, which neuron-rtd gives and redeems: the
receiver's tensor is the sender's memory, not a copy. The rules are CUDA's
(https://pytorch.org/docs/stable/notes/multiprocessing.html): use the
``spawn`` or ``forkserver`` start method; the sender keeps the tensor alive
until the receiver has it; writes are seen across processes once ordered by
synchronisation (the sender's pending work on its current stream has run
before the handle is made). Handles are redeemable only by processes of the
same user (and the same grant), and the memory lives until the last process
holding it lets go, so a receiver keeps its tensor when the sender exits.
"""

import torch
from torch.multiprocessing import reductions as _reductions
from multiprocessing.reduction import ForkingPickler

from torch_neuronx import _C

_reduce_other_storage = _reductions.reduce_storage


def _rebuild_storage(handle: bytes, offset: int, nbytes: int) -> torch.UntypedStorage:
    key = ("neuron", handle, offset, nbytes)
    storage = _reductions.storage_from_cache(torch.UntypedStorage, key)
    if storage is not None:
        return storage
    storage = _C._open_shared_storage(handle, offset, nbytes).untyped_storage()
    _reductions.shared_cache[key] = _reductions.StorageWeakRef(storage)
    return storage


def _reduce_storage(storage: torch.UntypedStorage):
    if storage.device.type != "neuron":
        return _reduce_other_storage(storage)
    whole = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)
    handle, offset, nbytes = _C._share_storage(whole)
    return (_rebuild_storage, (handle, offset, nbytes))


def register() -> None:
    """Pickles neuron storages (and so tensors, parameters) as handles."""
    ForkingPickler.register(torch.UntypedStorage, _reduce_storage)

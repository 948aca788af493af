"""``torch.neuron.memory``: the caching allocator's statistics, controls and
memory history, as ``torch.cuda.memory``.

``_record_memory_history`` makes the allocator keep the Python stack (and,
with ``stacks="all"``, the C++ stack) of every live allocation and a history
of its actions; ``_snapshot`` returns them in PyTorch's memory snapshot
format, which ``torch.cuda._memory_viz`` and the memory visualiser
(https://pytorch.org/memory_viz) read; ``_dump_snapshot`` pickles one to a
file. Recording costs a few microseconds per allocation (a stack walk);
``max_entries`` bounds the history, oldest entries giving way first.
"""

import pickle
import sys

from torch_neuronx import _C
from torch_neuronx._device import (  # noqa: F401
    _open,
    empty_cache,
    get_per_process_memory_fraction,
    list_processes,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)

def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize,
                           clear_history=False, skip_actions=None, device=None):
    """Starts (or, with ``enabled=None``, stops) recording the memory
    history of every neuron device of this process.

    enabled: None (stop), "state" (stacks of live allocations) or "all"
    (also the history of allocator actions). context: None, "state",
    "alloc" (also stacks of alloc actions) or "all" (also of frees).
    stacks: "python" or "all" (Python and C++ frames). max_entries: the
    history's bound per device. clear_history: drop the history kept so
    far. skip_actions: actions not to record (of "alloc",
    "free_requested", "free_completed", "segment_alloc", "segment_free",
    "snapshot", "oom"). ``device`` is accepted for ``torch.cuda``'s
    signature; recording covers every device, as on CUDA. A history stays
    readable by ``_snapshot`` after recording stops.
    """
    if isinstance(enabled, bool):  # torch.cuda's legacy form
        enabled = "all" if enabled else None
    if max_entries < 0:
        raise ValueError(f"_record_memory_history: max_entries must be >= 0, got {max_entries}")
    _C._record_memory_history(enabled, context, stacks, min(max_entries, 2**63 - 1),
                              clear_history, list(skip_actions or ()))


def _snapshot(device=None, augment_with_fx_traces=False):
    """The allocator's state and recorded history: ``{"segments": [...],
    "device_traces": [[...], ...]}`` as ``torch.cuda.memory._snapshot``
    documents it (every device's segments, one trace per device)."""
    _open()
    snapshot = _C._memory_snapshot()
    if augment_with_fx_traces:
        from torch._utils import _augment_memory_snapshot_stack_traces

        snapshot = _augment_memory_snapshot_stack_traces(snapshot)
    return snapshot


def _dump_snapshot(filename="dump_snapshot.pickle", augment_with_fx_traces=False):
    """Pickles ``_snapshot()`` to ``filename``, for https://pytorch.org/memory_viz."""
    snapshot = _snapshot(augment_with_fx_traces=augment_with_fx_traces)
    with open(filename, "wb") as file:
        pickle.dump(snapshot, file)


def memory_snapshot(mempool_id=None):
    """The segments of ``_snapshot()`` (``torch.cuda.memory_snapshot``)."""
    if mempool_id is not None:
        raise ValueError("neuron has one memory pool per device; mempool_id must be None")
    return _snapshot()["segments"]

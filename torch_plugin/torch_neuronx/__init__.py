"""torch_neuronx: AWS Trainium as the PyTorch device ``neuron``.

Every operator on a ``neuron`` tensor runs in neuron-rtd, the per-host
runtime daemon. ``import torch`` loads this package (entry point group
``torch.backends``); the first use of the device connects to the daemon, and
starts a per-user one on the simulated device when none is running
(``NEURON_RTD_AUTOSTART=0`` turns that off).
"""

import os as _os
import sys as _sys
import warnings as _warnings


def _autoload():
    """Entry point of group ``torch.backends``: ``import torch`` calls it.
    Registers the device without contacting the daemon. Defined before
    ``import torch``: when a program imports this package first, torch calls
    it while the package is half imported, and the package registers itself
    at its end."""
    register = globals().get("_register")
    if register is not None:
        register()


import torch as _torch  # noqa: E402

try:
    from torch_neuronx import _C
except ImportError as _error:
    # `import torch` loads this package and must keep working when the
    # extension cannot load (another torch version, a missing system library).
    _warnings.warn(
        f"torch_neuronx could not load its native extension, so the neuron device is "
        f"unavailable: {_error}",
        stacklevel=2,
    )
    _C = None

if _C is not None:
    from torch_neuronx import _device
    from torch_neuronx._device import (  # noqa: F401
        Event,
        Stream,
        current_device,
        current_stream,
        device_count,
        empty_cache,
        is_available,
        manual_seed,
        manual_seed_all,
        max_memory_allocated,
        max_memory_reserved,
        memory_allocated,
        memory_reserved,
        memory_stats,
        reset_peak_memory_stats,
        set_device,
        stream,
        synchronize,
    )

__all__ = [
    "Event",
    "compiled_graphs",
    "Stream",
    "current_device",
    "current_stream",
    "device_count",
    "empty_cache",
    "get_fallback_ops",
    "is_available",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "nki",
    "nki_op",
    "reset_peak_memory_stats",
    "set_device",
    "stream",
    "synchronize",
]

__version__ = "0.1.0"


def compiled_graphs():
    """The graphs ``torch.compile(backend="neuron")`` compiled in this
    process, oldest first: each a dict with its ``name``, ``nodes``,
    ``launches`` so far and ``client_nodes`` (why nodes of it run eagerly on
    the client; empty when the whole graph is one executable)."""
    import sys

    dynamo = sys.modules.get("torch_neuronx._dynamo")
    return dynamo.compiled_graphs() if dynamo is not None else []


def get_fallback_ops():
    """Names ("aten::op.overload") of operators that ran on the CPU instead of
    the device in this process, each announced once by a warning."""
    return list(_C._fallback_ops())


def _daemon_binary():
    explicit = _os.environ.get("NEURON_RTD_BINARY")
    if explicit:
        return explicit
    bundled = _os.path.join(_os.path.dirname(_C.__file__), "bin", "neuron-rtd")
    return bundled if _os.access(bundled, _os.X_OK) else "neuron-rtd"


def _format_on_host(tensor_str):
    # Printing formats values with many small operators and a float64 copy;
    # for a neuron tensor one copy to the host does it all.
    def format_tensor(self, indent):
        if self.device.type == "neuron":
            self = self.cpu()
        return tensor_str(self, indent)

    format_tensor.__wrapped__ = tensor_str
    return format_tensor


def _register():
    if _C is None or getattr(_torch, "neuron", None) is _device:
        return
    if not hasattr(_torch._tensor_str._tensor_str, "__wrapped__"):
        _torch._tensor_str._tensor_str = _format_on_host(_torch._tensor_str._tensor_str)
    _C._set_daemon_binary(_daemon_binary(), _sys.executable or "")
    _torch.utils.rename_privateuse1_backend("neuron")
    _torch._register_device_module("neuron", _device)
    _sys.modules["torch.neuron.memory"] = _device.memory
    _torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
    )
    from torch_neuronx import _distributed, _flex_attention, _meta_kernels, _multiprocessing
    from torch_neuronx._dynamo import _default_backend

    _default_backend.route_neuron_graphs()
    _meta_kernels.defer_dynamo_import()
    _flex_attention.enable()
    _distributed.register()
    _multiprocessing.register()


_register()

from torch_neuronx import neff  # noqa: E402,F401  (torch_neuronx.neff.load)
from torch_neuronx._nki_op import nki_op  # noqa: E402,F401
import nki  # noqa: E402,F401  (torch_neuronx.nki, as AWS's docs import it)

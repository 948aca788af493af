"""Runs `torchtitan.train` on the CPU, for the reference twin of a neuron run.

TorchTitan 0.2.2 has no CPU device: it takes
`torch._utils._get_available_device_type() or "cuda"`, and its memory monitor
asks the device module for CUDA's memory statistics. This launcher, started
with TORCH_DEVICE_BACKEND_AUTOLOAD=0 (so torch_neuronx is not imported),
points both at the CPU before TorchTitan is imported; the trainer itself runs
unchanged.
"""

import runpy
import sys
import types

import torch
import torch._utils


def cpu_device_module():
    module = types.SimpleNamespace(**{name: getattr(torch.cpu, name)
                                      for name in dir(torch.cpu) if not name.startswith("_")})
    module.get_device_name = lambda device=None: "cpu"
    module.get_device_properties = lambda device=None: types.SimpleNamespace(total_memory=1)
    module.reset_peak_memory_stats = lambda device=None: None
    module.empty_cache = lambda: None
    module.memory_stats = lambda device=None: {}
    module.current_device = lambda: 0  # a device index, as barrier(device_ids=...) takes
    return module


torch._utils._get_available_device_type = lambda: "cpu"
_device_module = cpu_device_module()
_original_get_device_module = torch._utils._get_device_module
torch._utils._get_device_module = (
    lambda device_type=None: _device_module if device_type in (None, "cpu")
    else _original_get_device_module(device_type))
sys.argv[0] = "torchtitan.train"
runpy.run_module("torchtitan.train", run_name="__main__", alter_sys=True)

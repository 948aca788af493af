"""Profiling ``neuron`` programs with ``torch.profiler``.

``torch.profiler.profile(activities=[ProfilerActivity.CPU,
ProfilerActivity.PrivateUse1])`` records device time per operator by itself:
the extension's Kineto plugin has neuron-rtd stamp every command the window
submits. This module adds what the Neuron tools add on Trainium:

- :class:`NeuronConfig`, an ``experimental_config`` choosing what is
  captured (:class:`ProfileMode`) and on which NeuronCores;
- :class:`NeuronProfiler`, whose :meth:`~NeuronProfiler.export_trace` (an
  ``on_trace_ready`` handler) writes the framework trace, the daemon's system
  trace and Parquet metrics into one directory.

See docs/profiling.md.
"""

from torch_neuronx.profiling._config import NeuronConfig, ProfileMode
from torch_neuronx.profiling._export import NeuronProfiler, last_capture

__all__ = ["NeuronConfig", "NeuronProfiler", "ProfileMode", "last_capture"]

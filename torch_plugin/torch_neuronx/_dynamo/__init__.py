"""torch.compile(backend="neuron"): TorchDynamo's graphs, captured with
AOTAutograd as ATen graphs (forward, backward, inference), run by
neuron-rtd as graph executables, one launch per graph and call.

Registered through the ``torch_dynamo_backends`` entry point, so it is
imported only when the name "neuron" is first looked up: ``import torch``
never imports ``torch._dynamo``. torch.compile's default backend sends
graphs on neuron here too (_default_backend.py).

Shapes are static, as on Trainium: a graph is specialized to its inputs'
sizes and strides, and a new shape compiles again (once per shape).
"""

import itertools
import logging

import torch

_log = logging.getLogger(__name__)
_graph_numbers = itertools.count()
# Every graph compiled in this process, in order (compiled_graphs()).
_graphs = []
# TorchInductor options already named in a warning.
_ignored_options = set()

# `mode=` values torch.compile knows; on neuron they all compile the same way.
_MODES = (None, "default", "lite", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def _compiler(role):
    from torch._functorch._aot_autograd.schemas import SerializableAOTDispatchCompiler

    from torch_neuronx._dynamo._lowering import Unsupported, plan_graph
    from torch_neuronx._dynamo._output_code import NeuronGraphCode
    from torch_neuronx._dynamo._partition import partition
    from torch_neuronx._dynamo._rng_state import rewrite

    def compile_graph(gm, example_inputs):
        from torch_neuronx._dynamo import _cuda_dtypes
        from torch_neuronx._dynamo._nki_expansion import expand

        name = f"{role}_{next(_graph_numbers)}"
        rewrite(gm)
        _cuda_dtypes.rewrite(gm)
        expand(gm)
        nodes = sum(1 for node in gm.graph.nodes if node.op == "call_function")
        listing = {"name": name, "nodes": nodes, "client_nodes": []}
        try:
            return NeuronGraphCode(plan=plan_graph(gm, example_inputs, name), listing=listing)
        except Unsupported:
            module, executables, reasons = partition(gm, example_inputs, name)
            _log.info("graph %s runs in part on the client: %s", name, "; ".join(reasons))
            listing.update(executables=executables, client_nodes=reasons)
            _graphs.append(listing)
            return NeuronGraphCode(module=module, listing=listing)

    # An OutputCode compiler: AOTAutograd keeps what it returns in its cache.
    return SerializableAOTDispatchCompiler(NeuronGraphCode, compile_graph)


def _has_symbols(example_inputs):
    for value in example_inputs:
        if isinstance(value, torch.SymInt):
            return True
        if isinstance(value, torch.Tensor) and not all(
                isinstance(n, int) for n in (*value.shape, *value.stride())):
            return True
    return False


def decompositions():
    """The decompositions applied while capturing: PyTorch's core ATen
    decompositions, less the one of the CPU flash-attention forward, whose
    graph does not match the saved statistics its backward operator reads
    (PyTorch 2.13: every gradient of attention was wrong); the operator
    itself runs in the daemon, as its backward does."""
    import torch._decomp

    table = torch._decomp.core_aten_decompositions()
    table.pop(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default, None)
    return table


def _aot_backend():
    from torch._dynamo.backends.common import aot_autograd

    from torch_neuronx._dynamo._output_code import cache_key_tag

    backend = aot_autograd(
        fw_compiler=_compiler("forward"),
        bw_compiler=_compiler("backward"),
        inference_compiler=_compiler("inference"),
        decompositions=decompositions(),
        keep_inference_input_mutations=True,
    )

    def capture(gm, example_inputs):
        # AOTAutograd's cache keeps the capture whole (bundled: the lowered
        # graphs inside the entry, not Inductor's FX graph cache); the
        # backward is lowered with the forward so that the entry is complete
        # when it is written; the tag keeps these entries apart from
        # Inductor's and from other versions of the lowering.
        with torch._functorch.config.patch(bundled_autograd_cache=True,
                                           force_non_lazy_backward_lowering=True), \
                torch.compiler.config.patch(cache_key_tag=cache_key_tag()):
            return backend(gm, example_inputs)

    return capture


def _specializing(gm, backend):
    """A graph traced with symbolic shapes, compiled once per concrete
    signature of its inputs when it is called."""
    compiled = {}

    def run(*args):
        key = tuple((tuple(a.shape), tuple(a.stride()), a.dtype, a.device)
                    if isinstance(a, torch.Tensor) else a for a in args)
        function = compiled.get(key)
        if function is None:
            function = compiled[key] = backend(gm, list(args))
        return function(*args)

    return run


def _ignore_inductor_options(options):
    """TorchInductor's options tune its code generators; none changes how a
    neuron graph compiles. Each is named once in a warning: scripts pass
    them (max_autotune, epilogue_fusion, ...) and must still run."""
    new = sorted(set(options) - _ignored_options)
    if new:
        _ignored_options.update(new)
        logging.getLogger("torch_neuronx").warning(
            "torch.compile on neuron ignores TorchInductor's options %s: they tune "
            "TorchInductor's code generators, which neuron graphs do not use", new)


def compile_for_neuron(gm, example_inputs, inductor_config=None):
    """Compiles a Dynamo graph for neuron: the ``neuron`` backend, and what
    torch.compile's default backend calls for graphs on neuron
    (_default_backend.py). ``inductor_config``: the TorchInductor options
    torch.compile derived from its mode and options (those a mode implies
    are accepted silently)."""
    if inductor_config:
        from torch._inductor import list_mode_options

        implied = {key for options in list_mode_options().values() for key in options}
        _ignore_inductor_options(set(inductor_config) - implied)
    backend = _aot_backend()
    if _has_symbols(example_inputs):
        return _specializing(gm, backend)
    return backend(gm, example_inputs)


def neuron_backend(gm, example_inputs, options=None, mode=None, **kwargs):
    """The ``neuron`` TorchDynamo backend. ``options`` are TorchInductor's,
    checked as torch.compile checks them for TorchInductor (RuntimeError for
    an unknown name or a value of the wrong type), then ignored."""
    if mode not in _MODES:
        raise ValueError(f"torch.compile(backend='neuron'): unknown mode {mode!r}")
    if kwargs:
        raise TypeError(f"the neuron backend takes no arguments {sorted(kwargs)}")
    if options:
        torch._TorchCompileInductorWrapper(None, options, None)
        _ignore_inductor_options(options)
    return compile_for_neuron(gm, example_inputs)


def compiled_graphs():
    """The graphs torch.compile(backend="neuron") compiled in this process,
    oldest first: each a dict with its ``name`` ("forward_0", "backward_1",
    "inference_2", ...), its ``nodes`` (ATen operators), its ``launches``
    so far, ``client_nodes``: why nodes of it run eagerly on the client
    rather than in its graph executables (empty when the whole graph is one
    executable), and from the daemon its ``tier`` (0: interpreted, 1: every
    executable of it runs compiled) and ``compile_state``."""
    from torch_neuronx import _C

    tiers = _C._graph_tiers() if _graphs else {}
    listed = []
    for graph in _graphs:
        states = [tiers.get(executable.executable_id, (0, "unloaded"))
                  for executable in graph["executables"] if executable.executable_id]
        listed.append({
            "name": graph["name"], "nodes": graph["nodes"],
            "launches": sum(executable.launches for executable in graph["executables"]),
            "client_nodes": list(graph["client_nodes"]),
            "tier": 1 if states and all(tier == 1 for tier, _ in states) else 0,
            "compile_state": "; ".join(state for _, state in states)})
    return listed


__all__ = ["compile_for_neuron", "compiled_graphs", "neuron_backend"]

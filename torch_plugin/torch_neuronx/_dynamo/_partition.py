"""Graphs the daemon can run only in part: the supported nodes are fused into
graph executables, the others stay in a Python graph that calls them eagerly
(on neuron through the device's eager path, or on the CPU where the traced
program put them)."""

import operator

from torch import fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from torch_neuronx._dynamo._lowering import Unsupported, lower, node_unsupported


class _DaemonSupport(OperatorSupportBase):
    def is_node_supported(self, submodules, node):
        if node.target is operator.getitem:
            return node_unsupported(node.args[0]) is None
        return node_unsupported(node) is None


def _runner(compiled, single):
    def run(*args):
        results = compiled(list(args))
        return results[0] if single else tuple(results)

    run.__name__ = compiled.name.replace(".", "_")
    return run


def _executable(compiled):
    """The _C._CompiledGraph behind a lowered callable."""
    return getattr(compiled, "executable", compiled)


def partition(gm, example_inputs, name):
    """`gm` with each run of supported nodes replaced by a call of a graph
    executable; the unsupported nodes stay. Returns (module, executables,
    reasons): the module to call with the graph's inputs, the graph
    executables it calls, and why nodes stayed."""
    reasons = sorted({why for node in gm.graph.nodes
                      if node.op == "call_function" and node.target is not operator.getitem
                      for why in [node_unsupported(node)] if why})
    fused = CapabilityBasedPartitioner(
        gm, _DaemonSupport(), allows_single_node_partition=True).partition_and_fuse()
    executables = []
    for node in list(fused.graph.nodes):
        if node.op != "call_module":
            continue
        submodule = getattr(fused, node.target)
        examples = [argument.meta["val"] for argument in node.args]
        try:
            compiled = lower(submodule, examples, f"{name}.{node.target}")
        except Unsupported as why:
            # A partition the lowering still refuses (a constant on the CPU)
            # runs as it is: eagerly, node by node.
            reasons.append(str(why))
            continue
        executables.append(_executable(compiled))
        output = next(n for n in submodule.graph.nodes if n.op == "output")
        single = not isinstance(output.args[0], (tuple, list))
        with fused.graph.inserting_before(node):
            call = fused.graph.call_function(_runner(compiled, single), tuple(node.args))
        call.meta = dict(node.meta)
        node.replace_all_uses_with(call)
        fused.graph.erase_node(node)
        delattr(fused, node.target)
    fused.graph.lint()
    fused.recompile()
    return fused, executables, reasons

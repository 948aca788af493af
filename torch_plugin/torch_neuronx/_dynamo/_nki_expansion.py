"""nki_op operators inside captured graphs, expanded: each call of an
operator made with torch_neuronx.nki_op is replaced by its function's ATen
operators and one neuron_nki::call per kernel it calls, traced with the
node's fake tensors. The lowering then makes each neuron_nki::call a node of
the graph executable that carries the traced kernel, so the kernels run in
the daemon with the rest of the graph."""

import operator

import torch
from torch import fx
from torch._guards import detect_fake_mode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils import _pytree as pytree

import nki._kernel
from torch_neuronx import _nki_op


def _inline(graph, node, traced, inputs):
    """Replaces `node` by the nodes of `traced`, whose placeholders are
    `inputs`."""
    environment = {}
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    for placeholder, value in zip(placeholders, inputs):
        environment[placeholder] = value
    returned = None
    with graph.inserting_before(node):
        for inner in traced.graph.nodes:
            if inner.op == "placeholder":
                continue
            if inner.op == "output":
                returned = inner.args[0]
                break
            if inner.op == "get_attr":
                raise NotImplementedError("an nki_op whose function makes tensor constants")
            environment[inner] = graph.node_copy(inner, lambda value: environment[value])
    result = fx.node.map_arg(returned, lambda value: environment[value])
    if isinstance(result, (list, tuple)):
        for user in list(node.users):
            if user.target is not operator.getitem:
                raise NotImplementedError(f"a use of {node.target}'s results other than indexing")
            user.replace_all_uses_with(result[user.args[1]])
            graph.erase_node(user)
    else:
        node.replace_all_uses_with(result)
    graph.erase_node(node)


def expand(gm):
    """`gm` with its nki_op calls expanded in place; returns whether any was."""
    expanded = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        function = _nki_op.function_of(node.target)
        if function is None:
            continue
        flat, spec = pytree.tree_flatten((node.args, node.kwargs))
        tensor_positions = [i for i, value in enumerate(flat) if isinstance(value, fx.Node)]
        fakes = [flat[i].meta["val"] for i in tensor_positions]

        def call(*tensors, flat=flat, spec=spec, positions=tensor_positions, fn=function):
            values = list(flat)
            for position, tensor in zip(positions, tensors):
                values[position] = tensor
            args, kwargs = pytree.tree_unflatten(values, spec)
            return fn(*args, **kwargs)

        fake_mode = detect_fake_mode(fakes)
        with fake_mode or torch._subclasses.FakeTensorMode(), nki._kernel.capturing():
            traced = make_fx(call)(*fakes)
        _inline(gm.graph, node, traced, [flat[i] for i in tensor_positions])
        expanded = True
    if expanded:
        gm.graph.lint()
        gm.recompile()
    return expanded

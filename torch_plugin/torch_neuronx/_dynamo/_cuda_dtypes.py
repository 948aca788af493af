"""Operators whose CUDA kernel takes dtypes the CPU kernel refuses, in
graphs, as eager mode runs them (torch_plugin/csrc/aten/CudaDtypes.cc): the
daemon runs ATen's CPU kernels, so such a node runs on the nearest dtype
the CPU kernel has, converted there and back inside the graph.

- ``histc`` on integer tensors (Mixtral's and Qwen2-MoE's routers count
  tokens per expert with it; "histogram_cpu" is not implemented for 'Int'):
  binned as float32 (exact below 2**24), counts in the input's dtype.
"""

import torch


def _convert(graph, source, dtype):
    return graph.call_function(torch.ops.aten._to_copy.default, (source,), {"dtype": dtype})


def _integral(node):
    value = node.meta.get("val")
    return (isinstance(value, torch.Tensor) and not value.dtype.is_floating_point
            and not value.dtype.is_complex and value.dtype != torch.bool)


def rewrite(gm):
    """Widens the operands of such nodes of `gm`, in place."""
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not torch.ops.aten.histc.default:
            continue
        source = node.args[0]
        if not _integral(source):
            continue
        dtype = source.meta["val"].dtype
        with gm.graph.inserting_before(node):
            widened = _convert(gm.graph, source, torch.float32)
            widened.meta["val"] = source.meta["val"].to(torch.float32)
        node.args = (widened, *node.args[1:])
        with gm.graph.inserting_after(node):
            narrowed = _convert(gm.graph, node, dtype)
        node.replace_all_uses_with(narrowed, delete_user_cb=lambda user: user is not narrowed)
        narrowed.meta["val"] = node.meta["val"]
        node.meta["val"] = node.meta["val"].to(torch.float32)
        changed = True
    if changed:
        gm.recompile()

"""neuron-rtd's compiler worker: the simulated neuronx-cc.

neuron-rtd starts this program as a separate, supervised process (as the
daemon's user, with resource limits and a timeout per graph) and sends it graphs that
clients have launched often enough. Each graph arrives as data, the JSON
form of a graph executable that the daemon has already checked; this
program rebuilds it as an FX graph of ATen operators, rewrites it to write
its outputs into buffers it is given (destination passing: the daemon runs
the result on HBM without copies), and compiles it with AOTInductor into
fused C++/OpenMP kernels, packaged as a .pt2 archive that the daemon loads.
Clients never send code; this program never runs what it compiles.

Protocol, one JSON object per line: the worker first writes
{"ready": true, "torch": VERSION, "isa": CPU_CAPABILITY}; then for each
request {"id": N, "graph": GRAPH, "output": PATH} on stdin it writes
{"id": N, "ok": true, "seconds": S} once PATH holds the package, or
{"id": N, "ok": false, "error": MESSAGE}.

GRAPH: {"name", "inputs": [LAYOUT], "nodes": [{"op": "aten::mm",
"overload": "", "args": [ARG], "returns": [-1 | n]}], "outputs":
[{"value": V, LAYOUT...}], "random": bool}, LAYOUT {"dtype", "sizes",
"strides"}, ARG a tagged list: ["v", id], ["vl", [ids]], ["ovl", [id|null]],
["i", int], ["f", float or "inf"/"-inf"/"nan"], ["b", bool], ["il", [...]],
["fl", [...]],
["bl", [...]], ["s", str], ["dtype", c10 ScalarType number], ["device"],
["none"].
"""

import json
import os
import sys
import time
import traceback

# c10::ScalarType numbers of the dtypes graph executables take.
_DTYPES = {}


def _dtype(number):
    import torch

    if not _DTYPES:
        _DTYPES.update({0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32,
                        4: torch.int64, 5: torch.float16, 6: torch.float32, 7: torch.float64,
                        9: torch.complex64, 11: torch.bool, 15: torch.bfloat16})
    return _DTYPES[number]


def _operator(qualified, overload):
    import torch

    namespace, name = qualified.split("::", 1)
    packet = getattr(getattr(torch.ops, namespace), name)
    return getattr(packet, overload or "default")


def _argument(tagged, values):
    tag = tagged[0]
    if tag == "v":
        return values[tagged[1]]
    if tag == "vl":
        return [values[i] for i in tagged[1]]
    if tag == "ovl":
        return [None if i is None else values[i] for i in tagged[1]]
    if tag in ("none",):
        return None
    if tag == "device":
        return "cpu"
    if tag == "dtype":
        return _dtype(tagged[1])
    if tag == "f":  # infinities and NaN come as text
        return float(tagged[1])
    if tag == "fl":
        return [float(number) for number in tagged[1]]
    return tagged[1]



def _collapsed(layout):
    """An output's destination as the compiled graph takes it: its expanded
    dimensions (stride 0, as expand() makes them) of size 1, so that it has
    no element twice (the daemon passes it so: graph_executable.cc)."""
    sizes = [1 if stride == 0 and size > 1 else size
             for size, stride in zip(layout["sizes"], layout["strides"])]
    return {**layout, "sizes": sizes}


def build(graph):
    """The graph as an FX GraphModule taking its inputs, then one buffer per
    output, returning nothing; and example inputs of the right layouts."""
    import torch
    from torch import fx

    g = fx.Graph()
    values = [g.placeholder(f"input_{i}") for i in range(len(graph["inputs"]))]
    destinations = [g.placeholder(f"output_{i}") for i in range(len(graph["outputs"]))]
    for node in graph["nodes"]:
        target = _operator(node["op"], node["overload"])
        schema = target._schema
        args, kwargs = [], {}
        for argument, tagged in zip(schema.arguments, node["args"]):
            value = _argument(tagged, values)
            if argument.kwarg_only:
                kwargs[argument.name] = value
            else:
                args.append(value)
        call = g.call_function(target, tuple(args), kwargs)
        returns = node["returns"]
        if len(returns) == 1 and returns[0] < 0:
            values.append(call)
            continue
        for index, length in enumerate(returns):
            item = call if len(returns) == 1 else g.call_function(
                __import__("operator").getitem, (call, index))
            if length < 0:
                values.append(item)
            else:
                values.extend(g.call_function(__import__("operator").getitem, (item, j))
                              for j in range(length))
    for output, destination in zip(graph["outputs"], destinations):
        value = values[output["value"]]
        # An expanded output (a stride-0 dimension) holds one element along
        # that dimension: its destination comes collapsed to 1 there
        # (_collapsed), and the value is written once.
        for dim, (size, stride) in enumerate(zip(output["sizes"], output["strides"])):
            if stride == 0 and size > 1:
                value = g.call_function(torch.ops.aten.slice.Tensor, (value, dim, 0, 1))
        if _dtype(output["dtype"]) == torch.bool:
            # Inductor's CPU code stores a bool vector element by element
            # through a temporary (PyTorch 2.13: 6.6 ms for 1M elements);
            # the same bytes stored as uint8 take 0.56 ms. A ReLU's saved
            # mask is such an output.
            destination = g.call_function(torch.ops.aten.view.dtype, (destination, torch.uint8))
            value = g.call_function(
                torch.ops.prims.convert_element_type.default,
                (g.call_function(torch.ops.aten.where.Scalar, (value, 1, 0)), torch.uint8))
        g.call_function(torch.ops.aten.copy_.default, (destination, value))
    g.output(())
    module = fx.GraphModule(torch.nn.Module(), g)
    examples = []
    for layout in (*graph["inputs"], *map(_collapsed, graph["outputs"])):
        dtype = _dtype(layout["dtype"])
        tensor = torch.empty_strided(layout["sizes"], layout["strides"], dtype=dtype)
        # Filled through its storage: an expanded layout (a stride-0
        # dimension) refuses writes through itself.
        storage = torch.empty(0, dtype=dtype).set_(tensor.untyped_storage())
        if dtype.is_floating_point or dtype.is_complex:
            storage.uniform_()
        else:
            storage.zero_()
        examples.append(tensor)
    return module, examples


def compile_graph(graph, output):
    import torch
    import torch._inductor

    module, examples = build(graph)
    exported = torch.export.export(module, tuple(examples), strict=False)
    # Random operators call ATen's, from the generator the daemon seeds for
    # each launch, as the interpreter does.
    with torch._inductor.config.patch(fallback_random=True):
        torch._inductor.aoti_compile_and_package(exported, package_path=output)


def main():
    import torch

    print(json.dumps({"ready": True, "torch": torch.__version__,
                      "isa": torch.backends.cpu.get_cpu_capability()}), flush=True)
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        started = time.monotonic()
        try:
            compile_graph(request["graph"], request["output"])
            response = {"id": request["id"], "ok": True, "seconds": time.monotonic() - started}
        except Exception as error:  # the daemon keeps the interpreter
            response = {"id": request.get("id"), "ok": False,
                        "error": f"{type(error).__name__}: {error}"[:4000]}
            traceback.print_exc(file=sys.stderr)
        print(json.dumps(response), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("TORCHINDUCTOR_CPP_DYNAMIC_THREADS", "1")
    main()

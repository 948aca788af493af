"""Lowering an ATen-level FX graph (AOTAutograd's forward, backward or
inference graph) to a neuron-rtd graph executable.

A graph whose every node the daemon can run becomes one executable, run by
one launch per call. Otherwise the graph is partitioned: the nodes the
daemon can run form executables, the rest (operators of other libraries,
nodes on the CPU, data-dependent nodes) stay in a Python graph that calls
them eagerly, as without torch.compile. Never a wrong result: a node is only
sent to the daemon when everything about it is known at compile time.
"""

import operator

import torch
from torch import fx
from torch.multiprocessing.reductions import StorageWeakRef

from torch_neuronx import _C, _nki_op

_NAMESPACES = ("aten", "prims")
# c10::Layout and c10::MemoryFormat, by their enum values.
_LAYOUTS = {torch.strided: 0}
_MEMORY_FORMATS = {
    torch.contiguous_format: 0,
    torch.preserve_format: 1,
    torch.channels_last: 2,
    torch.channels_last_3d: 3,
}


class Unsupported(Exception):
    """A node (or graph) the daemon cannot run; the message says why."""


def _is_static(tensor):
    return all(isinstance(n, int) for n in (*tensor.shape, *tensor.stride(),
                                             tensor.storage_offset()))


def _neuron_index(tensor):
    """The neuron device index of a traced tensor with static metadata."""
    if not isinstance(tensor, torch.Tensor):
        raise Unsupported(f"a value of type {type(tensor).__name__}")
    if tensor.device.type != "neuron":
        raise Unsupported(f"a tensor on {tensor.device}")
    if not _is_static(tensor):
        raise Unsupported("a tensor of data-dependent or symbolic shape")
    if tensor.layout != torch.strided:
        raise Unsupported(f"a {tensor.layout} tensor")
    return tensor.device.index or 0


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


def _return_lengths(node):
    """Per return of the node's operator: -1 for a Tensor, n for a Tensor[]
    of n."""
    schema = node.target._schema
    value = node.meta.get("val")
    results = value if len(schema.returns) > 1 else (value,)
    lengths = []
    for returned, result in zip(schema.returns, results):
        kind = returned.type
        if kind.kind() == "OptionalType":
            kind = kind.getElementType()
        if kind.kind() == "TensorType":
            lengths.append(-1)
        elif kind.kind() == "ListType" and kind.getElementType().kind() == "TensorType":
            lengths.append(len(result))
        else:
            raise Unsupported(f"{node.target} returns a {returned.type}")
    return lengths


def _schema_arguments(node, target=None):
    """The node's arguments in schema order (of `target`, by default the
    node's own operator), with defaults in the gaps; trailing defaults left
    out."""
    schema = (target or node.target)._schema
    values = []
    for position, argument in enumerate(schema.arguments):
        if position < len(node.args) and not argument.kwarg_only:
            values.append((argument, node.args[position], True))
        elif argument.name in node.kwargs:
            values.append((argument, node.kwargs[argument.name], True))
        elif argument.has_default_value():
            values.append((argument, argument.default_value, False))
        else:
            raise Unsupported(f"{target or node.target}: argument {argument.name} is missing")
    while values and not values[-1][2]:
        values.pop()
    return [(argument, value) for argument, value, _ in values]


def _is_number(value):
    return isinstance(value, (bool, int, float)) and not isinstance(value, torch.SymInt)


def _scalar_overload(node):
    """The node's operator, or, when it passes Python numbers for Tensor
    arguments (as traced graphs do: `aten.mul.Tensor(x, 2)`), the overload
    of the same operator that takes Scalars there (`aten.mul.Scalar`), if
    there is one."""
    target = node.target
    numbers = {argument.name for argument, value in _schema_arguments(node)
               if argument.type.kind() == "TensorType" and _is_number(value)}
    if not numbers:
        return target
    schema = target._schema
    for name in target.overloadpacket.overloads():
        candidate = getattr(target.overloadpacket, name)
        other = candidate._schema
        if (len(other.arguments) != len(schema.arguments)
                or len(other.returns) != len(schema.returns)
                or other.arguments and any(a.is_out for a in other.arguments)):
            continue
        fits = True
        for mine, theirs in zip(schema.arguments, other.arguments):
            wanted = "NumberType" if mine.name in numbers else mine.type.kind()
            if mine.name != theirs.name or theirs.type.kind() != wanted:
                fits = False
                break
        if fits:
            return candidate
    return target


class _Encoder:
    """Encodes a node's arguments for torch_neuronx._C._load_graph."""

    def __init__(self, value_of, device, scalar_tensor=None):
        self.value_of = value_of
        self.device = device
        # A Python number where a Tensor goes: made a 0-dim tensor of the
        # number's own dtype (int64, float32, bool), which type promotion
        # treats as it treats the number.
        self.scalar_tensor = scalar_tensor or (lambda number: 0)

    def tensor(self, value):
        if value is None:
            return None
        if _is_number(value):
            return self.scalar_tensor(value)
        if not isinstance(value, fx.Node):
            raise Unsupported(f"a tensor constant {type(value).__name__}")
        return self.value_of(value)

    def encode(self, kind, value):
        # Python's schemas show ScalarType, Layout, MemoryFormat and SymInt
        # as ints: the value's own type says which it is.
        name = kind.kind()
        if name == "OptionalType":
            if value is None:
                return ("none",)
            kind = kind.getElementType()
            name = kind.kind()
        if isinstance(value, torch.dtype):
            return ("dtype", value)
        if isinstance(value, torch.layout):
            if value not in _LAYOUTS:
                raise Unsupported(f"layout {value}")
            return ("i", _LAYOUTS[value])
        if isinstance(value, torch.memory_format):
            return ("i", _MEMORY_FORMATS[value])
        if isinstance(value, torch.device) or name == "DeviceObjType":
            device = torch.device(value)
            if device.type != "neuron" or (device.index or 0) != self.device:
                raise Unsupported(f"a factory on {device}")
            return ("device",)
        if name == "TensorType":
            if value is None:  # an undefined tensor (a gradient not computed)
                return ("none",)
            return ("v", self.tensor(value))
        if isinstance(value, fx.Node):
            raise Unsupported(f"a value computed in the graph for a {kind}")
        if name == "ListType":
            element = kind.getElementType()
            element_name = element.kind()
            if element_name == "TensorType":
                return ("vl", [self.tensor(item) for item in value])
            if (element_name == "OptionalType"
                    and element.getElementType().kind() == "TensorType"):
                return ("ovl", [self.tensor(item) for item in value])
            if element_name in ("IntType", "SymIntType"):
                if not all(isinstance(item, int) and not isinstance(item, bool)
                           for item in value):
                    raise Unsupported(f"a symbolic int list {value}")
                return ("il", [int(item) for item in value])
            if element_name == "FloatType":
                return ("fl", [float(item) for item in value])
            if element_name == "BoolType":
                return ("bl", [bool(item) for item in value])
            raise Unsupported(f"a list of {element}")
        if name in ("IntType", "SymIntType"):
            if not isinstance(value, int):
                raise Unsupported(f"a symbolic int {value}")
            return ("i", int(value))
        if name in ("FloatType", "SymFloatType"):
            if not isinstance(value, (int, float)):
                raise Unsupported(f"a symbolic float {value}")
            return ("f", float(value))
        if name in ("BoolType", "SymBoolType"):
            if not isinstance(value, bool):
                raise Unsupported(f"a symbolic bool {value}")
            return ("b", value)
        if name == "NumberType":
            if isinstance(value, bool):
                return ("b", value)
            if isinstance(value, int):
                return ("i", value)
            if isinstance(value, float):
                return ("f", value)
            raise Unsupported(f"a scalar {value!r}")
        if name == "StringType":
            return ("s", value)
        raise Unsupported(f"an argument of type {kind}")


def _is_nki_call(node):
    return node.target is torch.ops.neuron_nki.call.default


def node_unsupported(node):
    """Why the daemon cannot run `node`, or None when it can."""
    if node.op != "call_function":
        return f"a {node.op} node"
    if node.target is operator.getitem or _is_nki_call(node):
        return None
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return f"{getattr(target, '__name__', target)} is not an ATen operator"
    if target.namespace not in _NAMESPACES:
        return f"{target} belongs to library '{target.namespace}'"
    try:
        devices = set()
        for tensor in _tensors(node.meta.get("val")):
            devices.add(_neuron_index(tensor))
        for value in (*node.args, *node.kwargs.values()):
            for item in (value if isinstance(value, (list, tuple)) else (value,)):
                if isinstance(item, fx.Node):
                    for tensor in _tensors(item.meta.get("val")):
                        devices.add(_neuron_index(tensor))
                elif isinstance(item, torch.Tensor):
                    raise Unsupported("a tensor constant argument")
        if len(devices) > 1:
            raise Unsupported(f"tensors on neuron devices {sorted(devices)}")
        _return_lengths(node)
        encoder = _Encoder(lambda _: 0, next(iter(devices), 0))
        chosen = _scalar_overload(node)
        for argument, value in _schema_arguments(node, chosen):
            encoder.encode(argument.type, value)
    except Unsupported as why:
        return f"{target}: {why}"
    return None


def _meta(tensor):
    return (tensor.dtype, list(tensor.shape), list(tensor.stride()), tensor.storage_offset())


def _scalar_dtype(number):
    if isinstance(number, bool):
        return torch.bool
    return torch.int64 if isinstance(number, int) else torch.get_default_dtype()


def _substitute(value, constants):
    """`value` with the graph's constant inputs put in."""
    if isinstance(value, fx.Node):
        return constants.get(value, value)
    if isinstance(value, (list, tuple)):
        return type(value)(_substitute(item, constants) for item in value)
    return value


class _Graph:
    """A graph executable being built: its inputs, nodes and values."""

    def __init__(self):
        self.inputs = []  # tensor descriptions
        self.nodes = []  # (name, overload, arguments, return lengths)
        self.values = 0
        self.random = False
        # Each kernel its nki::call nodes run, as _C._nki_plan's arguments.
        self.nki_kernels = []

    def add_input(self, tensor):
        self.inputs.append(_meta(tensor))
        self.values += 1
        return self.values - 1

    def add_node(self, name, overload, arguments, lengths):
        results = []
        for length in lengths:
            if length < 0:
                results.append(self.values)
                self.values += 1
            else:
                results.append(list(range(self.values, self.values + length)))
                self.values += length
        self.nodes.append((name, overload, arguments, lengths))
        return results[0] if len(results) == 1 else tuple(results)


class GraphPlan:
    """A graph executable as data: what `_C._load_graph` loads, and which of
    the caller's arguments (and module constants) it takes. Picklable when
    it has no constants (the client's compile cache keeps it)."""

    def __init__(self, name, device, inputs, nodes, results, random, tensor_positions,
                 input_count, attributes, nki_kernels=()):
        self.name = name
        self.device = device
        self.inputs = inputs
        self.nodes = nodes
        self.results = results
        self.random = random
        self.tensor_positions = tensor_positions
        self.input_count = input_count
        # Neuron tensors of the module (get_attr nodes), passed after the inputs.
        self.attributes = attributes
        self.nki_kernels = list(nki_kernels)

    def __getstate__(self):
        if self.attributes:
            raise TypeError(f"graph {self.name} holds module constants, which are not data")
        return self.__dict__


def load(plan):
    """Loads `plan` into the daemon; returns the callable that runs it with
    the graph's inputs (a list) and returns its outputs (a list)."""
    compiled = _C._load_graph(plan.name, plan.device, plan.inputs, plan.nodes, plan.results,
                              plan.random,
                              [_C._nki_plan(*kernel) for kernel in getattr(plan, "nki_kernels", [])])
    if len(plan.tensor_positions) == plan.input_count and not plan.attributes:
        return compiled
    positions, attributes = plan.tensor_positions, plan.attributes

    def run(args):
        return compiled([args[i] for i in positions] + attributes)

    run.name = compiled.name
    run.executable = compiled
    return run


def lower(gm, example_inputs, name):
    """Loads `gm` (every node supported) as one graph executable; returns
    the callable that runs it (see `load`)."""
    return load(plan_graph(gm, example_inputs, name))


def _storage_owners(returned):
    """Outputs that alias each other (a tensor and views of it, the same
    value twice) must come back aliased, as in eager: AOTAutograd leaves
    that to the compiled graph when they need no gradient. For each storage
    that several outputs share, the first output that spans all of it (its
    memory is exactly the storage's); the others are made as its views.
    Storages no output spans keep an output each."""
    from torch._prims_common import is_non_overlapping_and_dense_or_false

    sharing = {}
    for position, value in enumerate(returned):
        if value is not None and value.op != "placeholder":
            storage = StorageWeakRef(value.meta["val"].untyped_storage())
            sharing.setdefault(storage, []).append(position)
    owners = {}
    for storage, positions in sharing.items():
        if len(positions) < 2:
            continue
        for position in positions:
            tensor = returned[position].meta["val"]
            if (tensor.storage_offset() == 0 and is_non_overlapping_and_dense_or_false(tensor)
                    and tensor.numel() * tensor.element_size()
                    == tensor.untyped_storage().nbytes()):
                owners[storage] = position
                break
    return owners


def plan_graph(gm, example_inputs, name):
    """`gm` (every node supported) as a GraphPlan; Unsupported otherwise."""
    graph = _Graph()
    structure = {}  # fx node -> value id, or a list/tuple of them
    constants = {}  # fx node of a non-tensor input -> its (specialized) value
    storages = {}  # input storage -> position among the tensor inputs
    tensor_positions = []  # positions of the caller's arguments that are tensors
    attributes = []  # neuron tensors of the module, passed after the inputs
    device = None

    def note_device(tensor):
        nonlocal device
        index = _neuron_index(tensor)
        if device is not None and index != device:
            raise Unsupported(f"tensors on neuron:{device} and neuron:{index}")
        device = index

    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    for position, (node, example) in enumerate(zip(placeholders, example_inputs)):
        if isinstance(example, torch.Tensor):
            note_device(example)
            structure[node] = graph.add_input(example)
            storages.setdefault(StorageWeakRef(example.untyped_storage()), structure[node])
            tensor_positions.append(position)
        elif isinstance(example, (int, float, bool)) and not isinstance(example, torch.SymInt):
            # Only a graph specialized to this value gets here.
            constants[node] = example
        else:
            raise Unsupported(f"input {position} is a {type(example).__name__}")
    for node in gm.graph.nodes:
        if node.op != "get_attr":
            continue
        attribute = getattr(gm, node.target)
        if not isinstance(attribute, torch.Tensor):
            raise Unsupported(f"a constant {node.target}")
        note_device(attribute)
        structure[node] = graph.add_input(attribute)
        attributes.append(attribute)

    def scalar_tensor(number):
        dtype = _scalar_dtype(number)
        tag = "b" if dtype == torch.bool else "i" if dtype == torch.int64 else "f"
        return graph.add_node("aten::scalar_tensor", "",
                              [(tag, number), ("dtype", dtype), ("none",), ("device",)], [-1])

    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output", "get_attr"):
            continue
        reason = node_unsupported(node)
        if reason is not None:
            raise Unsupported(reason)
        if node.target is operator.getitem:
            source, index = node.args
            structure[node] = structure[source][index]
            continue
        for tensor in _tensors(node.meta.get("val")):
            note_device(tensor)
        if _is_nki_call(node):
            kernel, arguments = node.args
            graph.nki_kernels.append(_nki_op.traced_kernel(kernel).description)
            structure[node] = graph.add_node(
                "nki::call", "", [("i", len(graph.nki_kernels) - 1),
                                  ("vl", [structure[argument] for argument in arguments])],
                _return_lengths(node))
            continue
        target = _scalar_overload(node)
        encoder = _Encoder(lambda source: structure[source], device or 0, scalar_tensor)
        arguments = [encoder.encode(argument.type, _substitute(value, constants))
                     for argument, value in _schema_arguments(node, target)]
        schema = target._schema
        structure[node] = graph.add_node(schema.name, schema.overload_name, arguments,
                                         _return_lengths(node))
        graph.random = graph.random or torch.Tag.nondeterministic_seeded in target.tags
    output = next(node for node in gm.graph.nodes if node.op == "output")
    returned = output.args[0]
    returned = list(returned) if isinstance(returned, (tuple, list)) else [returned]
    for value in returned:
        if value is None:
            continue
        if not isinstance(value, fx.Node) or value in constants:
            raise Unsupported(f"an output {value!r}")
        if not isinstance(value.meta.get("val"), torch.Tensor):
            raise Unsupported(f"an output of type {type(value.meta.get('val')).__name__}")
    owners = _storage_owners(returned)
    results = []
    for position, value in enumerate(returned):
        if value is None:
            results.append(("none",))
            continue
        tensor = value.meta["val"]
        if value.op == "placeholder":
            results.append(("input", structure[value]))
            continue
        storage = StorageWeakRef(tensor.untyped_storage())
        aliased = storages.get(storage)
        if aliased is not None:
            results.append(("view", aliased, _meta(tensor)))
        elif owners.get(storage, position) != position:
            results.append(("output_view", owners[storage], _meta(tensor)))
        else:
            results.append(("computed", structure[value], _meta(tensor)))
    return GraphPlan(name, device or 0, graph.inputs, graph.nodes, results, graph.random,
                     tensor_positions, len(example_inputs), attributes, graph.nki_kernels)

"""@nki.jit kernels: traced once per argument signature, then run on the
device (neuron tensors: one launch on the current stream), in this process
(CPU tensors or NumPy arrays: nki.simulate), or only traced (fake and meta
tensors: torch.compile and custom ops' fake implementations)."""

import contextlib
import functools
import inspect
import itertools
import threading
import time

import numpy as np
import torch
import torch._compile

from nki import _dtypes, _print, _target, _trace
from nki._errors import NkiValidationError
from nki._tensor import NkiTensor
from torch_neuronx import _meta_kernels

_capture = threading.local()


@contextlib.contextmanager
def capturing():
    """Kernel calls inside become neuron_nki::call operators (what the
    neuron backend's expansion of nki_op traces), on contiguous copies of
    their tensors."""
    previous = getattr(_capture, "active", False)
    _capture.active = True
    try:
        yield
    finally:
        _capture.active = previous


def _storage_extent(tensor):
    if tensor.numel() == 0:
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))


def _is_fake(tensor):
    return isinstance(tensor, torch._subclasses.FakeTensor) or tensor.device.type == "meta"


def _constant_key(name, value):
    if isinstance(value, list):
        raise TypeError(f"kernel argument '{name}' is a list: NKI kernels take tuples")
    try:
        hash(value)
    except TypeError:
        frozen = _frozen(value)
        if frozen is None:
            raise TypeError(f"kernel argument '{name}' of type {type(value).__name__} is not "
                            "hashable: kernels take tensors and compile-time constants") from None
        return ("constant", type(value).__name__, frozen)
    return ("constant", type(value).__name__, value)


def _frozen(value):
    """A hashable stand-in for a kernel library's configuration object (an
    nl.NKIObject, or a dataclass, that @dataclass made unhashable); None for
    anything else."""
    import dataclasses
    from nki.language import NKIObject
    if not (isinstance(value, NKIObject) or dataclasses.is_dataclass(value)):
        return None
    items = []
    for key, field in sorted(vars(value).items()):
        try:
            hash(field)
        except TypeError:
            field = _frozen(field)
            if field is None:
                return None
        items.append((key, field))
    return (type(value), tuple(items))


class TracedKernel:
    """One specialization of a kernel: its plan, what it returns, and the
    HBM buffers a launch passes (address i: tensor argument i, then outputs
    and scratch)."""

    def __init__(self, name, trace, arguments, outputs, returns, description, seconds):
        from torch_neuronx import _C
        self.name = name
        self.trace = trace
        self.arguments = arguments
        # The allocations returned, and the view of each the kernel returned
        # (shape, strides, offset in elements: `out.reshape(...)`).
        self.outputs = [allocation for allocation, _ in outputs]
        self.output_views = [view for _, view in outputs]
        self.returns = returns
        # _C._nki_plan's arguments (plain data), and the plan made of them.
        self.description = description
        self.plan = _C._nki_plan(*description)
        self.trace_seconds = seconds
        self.address_count = max((a.address_index + 1 for a in trace.allocations
                                  if a.space == "hbm"), default=0)
        self.launched = False
        self.prints = any(a.role == "print" for a in trace.allocations)

    @property
    def instruction_count(self):
        return len(self.trace.instructions)

    @functools.cached_property
    def written_allocations(self):
        """The HBM allocations the kernel writes, in address order: what a
        neuron_nki::call of it returns."""
        return sorted((a for a in self.trace.allocations
                       if a.space == "hbm" and a.written and a.alias_of is None),
                      key=lambda a: a.address_index)

    def call(self, tensors):
        """neuron_nki::call's eager implementation: runs the kernel with
        written arguments copied first; returns what it writes."""
        from torch_neuronx import _C
        written = {a.argument for a in self.written_allocations if a.role == "argument"}
        tensors = [t.clone() if i in written else t for i, t in enumerate(tensors)]
        device = tensors[0].device
        hbm, _ = self.buffers(tensors, device)
        _C._nki_launch(self.plan, hbm, device.index or 0, not self.launched)
        self.launched = True
        return [hbm[a.address_index] for a in self.written_allocations]

    def buffers(self, tensors, device):
        """Tensors for every address: the arguments, new outputs and scratch."""
        hbm = [None] * self.address_count
        for allocation, tensor in zip(self.arguments, tensors):
            hbm[allocation.address_index] = tensor
        results = []
        for allocation in self.trace.allocations:
            if allocation.space != "hbm" or allocation.role == "argument" or \
                    allocation.alias_of is not None:
                continue
            shape = allocation.shape if allocation.role == "output" else (allocation.elements,)
            hbm[allocation.address_index] = torch.empty(
                shape, dtype=_dtypes.storage(allocation.dtype), device=device)
        for allocation in self.outputs:
            results.append(hbm[allocation.address_index])
        return hbm, results

    def result(self, outputs):
        """What the kernel returns, given its returned allocations' tensors
        (torch or NumPy): each as the view the kernel returned of it."""
        if self.returns == "none":
            return None
        outputs = [_returned_view(tensor, view) for tensor, view in zip(outputs, self.output_views)]
        if self.returns == "single":
            return outputs[0]
        return tuple(outputs)


def _returned_view(tensor, view):
    shape, strides, offset = view
    if isinstance(tensor, np.ndarray):
        if tuple(tensor.shape) == shape and offset == 0 and \
                tuple(s // tensor.itemsize for s in tensor.strides) == strides:
            return tensor
        flat = tensor.reshape(-1)[offset:]
        return np.lib.stride_tricks.as_strided(
            flat, shape, tuple(s * tensor.itemsize for s in strides), writeable=True)
    if tuple(tensor.shape) == shape and tensor.stride() == strides and offset == 0:
        return tensor
    return tensor.as_strided(shape, strides, tensor.storage_offset() + offset)


# nki.jit's mode= (the legacy API's; the current one picks by argument
# type): what runs a call.
# "trace" marked NKI 0.1's sub-kernels (called from kernels, inlined there).
_MODES = {"auto": None, "simulation": "simulate", "baremetal": "device", "benchmark": "device",
          "profile": "device", "trace": None, "torchxla": None}


class Kernel:
    """A function decorated with @nki.jit. Call it with tensors; index it
    with a launch grid (`kernel[2](...)`, `kernel[2, 2](...)`) to run that
    many instances, each seeing its nl.program_id, one after another on the
    core."""

    def __init__(self, function, grid=(1,), cache=None, mode="auto", legacy=False):
        functools.update_wrapper(self, function)
        self.function = function
        self.grid = grid
        self.mode = mode
        # Made by neuronxcc.nki.jit: the legacy API's rules.
        self.legacy = legacy
        self._cache = {} if cache is None else cache
        self._signature = inspect.signature(function)

    def __getitem__(self, grid):
        grid = tuple(grid) if isinstance(grid, tuple) else (grid,)
        sizes = []
        for size in grid:
            # nl.nc(2) and nl.spmd_dim(...) of the legacy API are sizes too.
            size = getattr(size, "grid_size", size)
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise ValueError(f"a launch grid is positive integers, not {grid}")
            sizes.append(int(size))
        if not sizes:
            raise ValueError("a launch grid has at least one dimension")
        return Kernel(self.function, tuple(sizes), self._cache, self.mode, self.legacy)

    def __repr__(self):
        return f"<nki kernel {self.__name__}>"

    def __call__(self, *args, **kwargs):
        return _call_outside_dynamo(self, *args, **kwargs)

    def run(self, args, kwargs, mode=None):
        if _trace.active() is not None:
            # A kernel called from a kernel is inlined, as NKI's compiler does.
            if self.grid != (1,):
                _trace.fail("err_nested_kernel_with_spmd_grid",
                            "a kernel called from a kernel takes no launch grid")
            return self.function(*args, **kwargs)
        capture = getattr(_capture, "active", False)
        originals = None
        if capture:
            original = self._signature.bind(*args, **kwargs)
            original.apply_defaults()
            originals = [v for v in original.arguments.values() if isinstance(v, torch.Tensor)]
            args = [a.contiguous() if isinstance(a, torch.Tensor) else a for a in args]
            kwargs = {k: v.contiguous() if isinstance(v, torch.Tensor) else v
                      for k, v in kwargs.items()}
        bound, tensors, names, key, numpy_arguments, dtypes = self._bind(args, kwargs)
        mode = "fake" if capture else mode or _MODES[self.mode] or self._mode(tensors)
        if mode == "device" and torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            raise RuntimeError(
                f"NKI kernel '{self.__name__}' was called on tensors that require grad: autograd "
                "cannot see into a kernel. Wrap it in torch_neuronx.nki_op and give the op a "
                "backward with register_autograd.")
        traced = self._cache.get(key)
        if traced is None:
            traced = self._trace(bound, names, dtypes)
            self._cache[key] = traced
        if capture:
            return self._emit_call(traced, tensors, originals)
        if mode == "fake":
            device = tensors[0].device if tensors else torch.device("meta")
            outputs = [torch.empty(a.shape, dtype=_dtypes.storage(a.dtype), device=device)
                       for a in traced.outputs]
            return traced.result(outputs)
        if mode == "simulate":
            return self._simulate(traced, tensors, numpy_arguments)
        if numpy_arguments:
            return self._launch_numpy(traced, tensors, numpy_arguments)
        return self._launch(traced, tensors)

    def _bind(self, args, kwargs):
        """The call's arguments (NumPy arrays as tensors sharing their
        memory), its tensors, their names and the dtypes the kernel sees, and
        its cache key."""
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        tensors, names, key, numpy_arguments, dtypes = \
            [], [], [self.grid, _target.current().name], [], []
        for name, value in bound.arguments.items():
            dtype = None
            if _dtypes.is_numpy(value):
                numpy_arguments.append(name)
                value, dtype = _dtypes.from_numpy(value)
                bound.arguments[name] = value
            if isinstance(value, torch.Tensor):
                if dtype is None:
                    if value.dtype == torch.bool:
                        value = value.view(torch.uint8)
                        bound.arguments[name] = value
                    dtype = _dtypes.normalize(value.dtype)
                tensors.append(value)
                names.append(name)
                dtypes.append(dtype)
                key.append((name, tuple(value.shape), tuple(value.stride()), dtype))
            else:
                key.append((name, _constant_key(name, value)))
        return bound, tensors, names, tuple(key), numpy_arguments, dtypes

    @staticmethod
    def _mode(tensors):
        if any(_is_fake(t) for t in tensors):
            return "fake"
        types = {t.device.type for t in tensors}
        if types <= {"neuron"} and types:
            return "device"
        if types <= {"cpu"}:
            return "simulate"
        raise ValueError(f"an NKI kernel runs on neuron tensors (or CPU tensors with "
                         f"nki.simulate); got tensors on {sorted(types)}")

    def _trace(self, bound, names, dtypes):
        started = time.perf_counter()
        trace = _trace.Trace(self.__name__, _target.current())
        trace.grid = self.grid
        arguments = []
        with _trace.tracing(trace):
            for position, name in enumerate(names):
                tensor = bound.arguments[name]
                allocation = trace.allocate(_trace.hbm, dtypes[position], tuple(tensor.shape),
                                            name, role="argument")
                allocation.argument = position
                allocation.address_index = position
                allocation.elements = _storage_extent(tensor)
                arguments.append(allocation)
                bound.arguments[name] = NkiTensor(allocation, tensor.shape, tensor.stride())
            returned = None
            for instance in itertools.product(*(range(g) for g in self.grid)):
                trace.begin_instance(instance)
                returned = self.function(*bound.args, **bound.kwargs)
        outputs, returns = self._outputs(returned, arguments)
        next_address = len(arguments)
        for index, allocation in enumerate(trace.allocations):
            allocation.index = index
            if allocation.space == "hbm" and allocation.role != "argument" and \
                    allocation.alias_of is None:
                allocation.address_index = next_address
                next_address += 1
        _trace.place_tiles(trace)
        return TracedKernel(self.__name__, trace, arguments, outputs, returns, _describe(trace),
                            time.perf_counter() - started)

    def _outputs(self, returned, arguments):
        if returned is None:
            if not any(a.written for a in arguments):
                raise NkiValidationError(
                    "err_tensor_output_not_written_to",
                    f"kernel '{self.__name__}' returns nothing and writes none of its HBM "
                    "arguments: return an nl.shared_hbm tensor or write an output parameter",
                    f"{inspect.getsourcefile(self.function)}:"
                    f"{self.function.__code__.co_firstlineno}")
            return [], "none"
        single = isinstance(returned, NkiTensor)
        values = [returned] if single else returned
        if not isinstance(values, (tuple, list)) or \
                not all(isinstance(v, NkiTensor) for v in values):
            raise TypeError(f"kernel '{self.__name__}' returns {type(returned).__name__}: a "
                            "kernel returns nothing, an nl.shared_hbm tensor or a tuple of them")
        outputs = []
        for value in values:
            allocation = value._allocation
            if allocation.space != "hbm":
                raise NkiValidationError(
                    "err_unsupported_memory", f"kernel '{self.__name__}' returns tile "
                    f"'{allocation.name}' in {allocation.space}: returned outputs are "
                    "nl.shared_hbm tensors", allocation.location)
            view = (value.shape, value.strides, value.offset)
            if allocation.role == "argument":
                outputs.append((allocation, view))
                continue
            if allocation.buffer is not _trace.shared_hbm and self.legacy:
                # The legacy API let a kernel return an nl.hbm tensor.
                allocation.role = "output"
            elif allocation.buffer is not _trace.shared_hbm:
                raise NkiValidationError(
                    "err_unsupported_memory", f"kernel '{self.__name__}' returns "
                    f"'{allocation.name}' in nl.hbm: returned outputs are nl.shared_hbm "
                    "tensors", allocation.location)
            if not allocation.written:
                raise NkiValidationError(
                    "err_tensor_output_not_written_to", f"output tensor '{allocation.name}' of "
                    f"kernel '{self.__name__}' is never written", allocation.location)
            outputs.append((allocation, view))
        return outputs, "single" if single else "tuple"

    def _emit_call(self, traced, tensors, originals):
        """One neuron_nki::call node; what the kernel writes flows back into
        the arguments it wrote (as copies, which functional graphs keep)."""
        from torch_neuronx import _nki_op
        if not tensors:
            raise ValueError(f"NKI kernel '{self.__name__}' takes no tensors: under "
                             "torch.compile a kernel needs at least one")
        results = torch.ops.neuron_nki.call(_nki_op.kernel_index(traced), tensors)
        values = {}
        for allocation, result in zip(traced.written_allocations, results):
            if allocation.role == "argument":
                originals[allocation.argument].copy_(result)
            values[allocation.address_index] = result
        outputs = [originals[a.argument] if a.role == "argument" else values[a.address_index]
                   for a in traced.outputs]
        return traced.result(outputs)

    def _launch(self, traced, tensors):
        return traced.result(self._run_on_device(traced, tensors))

    def _run_on_device(self, traced, tensors):
        """One launch; the returned allocations' tensors."""
        from torch_neuronx import _C
        if tensors:
            device = tensors[0].device
            for tensor in tensors:
                if tensor.device != device:
                    raise ValueError(f"NKI kernel '{self.__name__}' got tensors on {device} and "
                                     f"{tensor.device}")
        else:
            device = torch.device("neuron", torch.neuron.current_device())
        index = device.index if device.index is not None else torch.neuron.current_device()
        hbm, outputs = traced.buffers(tensors, device)
        _C._nki_launch(traced.plan, hbm, index, not traced.launched)
        traced.launched = True
        if traced.prints:
            _print.print_values(traced, hbm)
        return self._argument_results(traced, tensors, outputs)

    def _launch_numpy(self, traced, tensors, numpy_arguments):
        """A run on the device for NumPy arrays (nki.baremetal): copies in,
        one launch, HBM arguments the kernel wrote copied back in place."""
        on_device = [t.to("neuron") if t.device.type == "cpu" else t for t in tensors]
        outputs = self._run_on_device(traced, on_device)
        written = {a.argument for a in traced.written_allocations if a.role == "argument"}
        for index in written:
            tensors[index].copy_(on_device[index].cpu())
        converted = [_dtypes.to_numpy(tensors[a.argument] if a.role == "argument" else o.cpu(),
                                      a.dtype)
                     for o, a in zip(outputs, traced.outputs)]
        return traced.result(converted)

    def _simulate(self, traced, tensors, numpy_arguments):
        from torch_neuronx import _C
        hbm, outputs = traced.buffers(tensors, torch.device("cpu"))
        _C._nki_simulate(traced.plan, hbm)
        if traced.prints:
            _print.print_values(traced, hbm)
        results = self._argument_results(traced, tensors, outputs)
        # NumPy in, NumPy out; a kernel of no tensor arguments gives NumPy
        # too, as AWS's simulator does.
        if numpy_arguments or not tensors:
            results = [_dtypes.to_numpy(r, a.dtype) for r, a in zip(results, traced.outputs)]
        return traced.result(results)

    @staticmethod
    def _argument_results(traced, tensors, outputs):
        # A kernel may return one of its HBM arguments (written in place).
        results = []
        for allocation, output in zip(traced.outputs, outputs):
            results.append(tensors[allocation.argument] if allocation.role == "argument"
                           else output)
        return results


def _call(kernel, *args, **kwargs):
    return kernel.run(args, kwargs)


# Dynamo does not trace into a kernel call: a kernel called directly in a
# compiled function breaks the graph there and runs as in eager mode
# (wrapped in an nki_op, it is a node of the graph). As PyTorch's own
# meta kernels, without importing torch._dynamo in a process that never
# compiles.
_call_outside_dynamo = torch._compile._disable_dynamo(_call)
setattr(_call, "__dynamo_disable", _meta_kernels._DisableOnceDynamoIsLoaded(_call, True))


def _describe(trace):
    """The kernel as plain data, _C._nki_plan's arguments (picklable: a
    graph executable that runs the kernel keeps it)."""
    target = trace.target
    allocations = []
    for allocation in trace.allocations:
        if allocation.space == "hbm":
            allocations.append((0, _dtypes.code(allocation.dtype), allocation.name,
                                allocation.address_index,
                                allocation.elements, 0, 0, 0, 0, list(allocation.shape)))
        else:
            allocations.append((_trace.SPACE_CODES[allocation.space],
                                _dtypes.code(allocation.dtype),
                                allocation.name, 0, 0, allocation.shape[0],
                                allocation.free_elements, allocation.partition_start,
                                allocation.byte_offset, []))
    instructions = []
    for opcode, operands, alu, activation, scalars, flags, axes, source in trace.instructions:
        instructions.append((opcode, [None if o is None else o.access() for o in operands], alu,
                             activation, scalars, flags, axes, source))
    return (trace.name, (target.partitions, target.sbuf_partition_bytes,
                         target.psum_partition_bytes),
            allocations, instructions, list(trace.locations))


# Options of AWS's nki.jit (both APIs) that only steer its compiler, its
# NEFF files or its profiler: accepted, and without effect here (docs/nki.md).
_COMPILER_OPTIONS = frozenset({
    "platform_target", "show_compiler_tool", "debug_kernel", "additional_compile_opt",
    "save_neff_name", "save_trace_name", "working_directory", "overwrite", "profile_nth",
    "warmup", "iters", "enable_out_of_bound_check", "experimental_flags", "kernel_return",
    "artifacts_dir", "compiler_args", "grid", "lnc", "target", "debug", "enable_cache",
    "show_compiler_tb"})


def jit(function=None, mode="auto", legacy=False, **options):
    """Makes `function` an NKI kernel (a Kernel). mode= is the legacy API's:
    "auto" (by argument type: neuron tensors run on the device, CPU tensors
    and NumPy arrays in this process), "simulation" (in this process),
    "baremetal"/"benchmark"/"profile" (on the device, NumPy in and out),
    "trace" (NKI 0.1's mark of a sub-kernel: as "auto"). The target comes from
    NEURON_PLATFORM_TARGET_OVERRIDE; the compiler's options are accepted and
    do nothing here."""
    if mode not in _MODES:
        if mode == "jax":
            raise NotImplementedError("nki.jit(mode='jax'): JAX is not supported by this "
                                      "simulator; call the kernel with torch tensors or NumPy "
                                      "arrays (docs/nki.md)")
        raise ValueError(f"nki.jit mode={mode!r}: one of {sorted(_MODES)}")
    unknown = sorted(set(options) - _COMPILER_OPTIONS)
    if unknown:
        raise TypeError(f"nki.jit got unexpected options {unknown}")
    if function is None:
        return functools.partial(jit, mode=mode, legacy=legacy, **options)
    return Kernel(function, mode=mode, legacy=legacy)


def simulate(kernel):
    """kernel, run in this process on CPU tensors or NumPy arrays by the same
    interpreter neuron-rtd uses; no daemon needed. HBM arguments the kernel
    writes are updated in place."""
    if not isinstance(kernel, Kernel):
        kernel = Kernel(kernel)

    def run(*args, **kwargs):
        return kernel.run(args, kwargs, mode="simulate")

    return run


def simulate_kernel(kernel, *args, **kwargs):
    """The legacy spelling of nki.simulate(kernel)(*args)."""
    return simulate(kernel)(*args, **kwargs)


def meta_like(value):
    """A meta tensor of a tensor's or NumPy array's shape, strides and
    dtype (tracing needs nothing else); other values as they are."""
    if _dtypes.is_numpy(value):
        value = _dtypes.from_numpy(value)[0]
    if isinstance(value, torch.Tensor):
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
    return value


def trace(kernel, *args, **kwargs):
    """Traces `kernel` for these arguments without running it; returns the
    TracedKernel (its instruction count, trace time and tiles)."""
    if not isinstance(kernel, Kernel):
        kernel = Kernel(kernel)
    fakes = [meta_like(a) for a in args]
    kernel.run(fakes, kwargs, mode="fake")
    return kernel._cache[kernel._bind(fakes, kwargs)[3]]

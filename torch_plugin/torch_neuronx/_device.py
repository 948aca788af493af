"""``torch.neuron``: the device module PyTorch looks up for the ``neuron``
device (torch.accelerator, autocast, DDP and FSDP use it)."""

import contextlib

import torch

from torch_neuronx import _C

_initialized = False


def _open():
    """Opens the session with neuron-rtd (starting a per-user daemon when
    none answers), once."""
    global _initialized
    if not _initialized:
        _C._init()
        _initialized = True


def _lazy_init():
    """PyTorch calls this before it first uses the device, including to ask
    for the current stream, which torch.compile does while tracing even a
    CPU-only program: it must not start neuron-rtd. The session opens at the
    device's first real use instead (an allocation, a stream, an operator:
    they open it in the native backend)."""


_INDUCTOR_LOOKUPS = ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen",
                     "WrapperFxCodegen")


def __getattr__(name):
    # TorchInductor looks these up on the device module; it gets a clear
    # refusal (torch_neuronx/_dynamo/_inductor_refusal.py).
    if name in _INDUCTOR_LOOKUPS:
        from torch_neuronx._dynamo import _inductor_refusal

        return getattr(_inductor_refusal, name)
    raise AttributeError(f"module 'torch.neuron' has no attribute {name!r}")


def is_initialized():
    return _C._is_initialized()


def _is_in_bad_fork():
    """True in a child forked after this process opened the device."""
    return _C._is_in_bad_fork()


def is_available():
    """True when the device can be used: once it is in use, when the session
    has at least one NeuronCore; before, when a daemon answers or can be
    started (asked once, then remembered). Never raises, never starts a
    daemon nor opens a session: PyTorch asks it for every operator it
    traces, so it must cost nothing and touch nothing (a CPU-only
    torch.compile must not start neuron-rtd)."""
    if _C._is_initialized():
        return _C._device_count() > 0
    return _C._reachable()


def device_count():
    """NeuronCores visible to this process (NEURON_RT_VISIBLE_CORES); 0 when
    no daemon can be reached."""
    return _C._device_count()


def current_device():
    return torch.accelerator.current_device_index()


def _index(device):
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "neuron":
        raise ValueError(f"expected a neuron device, got {device}")
    return current_device() if device.index is None else device.index


def set_device(device):
    _open()
    torch.accelerator.set_device_index(_index(device))


class device:
    """Context manager that makes ``device`` the current neuron device."""

    def __init__(self, device):
        self.index = -1 if device is None else _index(device)
        self.previous = -1

    def __enter__(self):
        if self.index >= 0:
            self.previous = current_device()
            set_device(self.index)
        return self

    def __exit__(self, *exc):
        if self.index >= 0:
            set_device(self.previous)
        return False


def synchronize(device=None):
    """Waits for every stream of the device; raises the first asynchronous
    error (with the failing operator's name) if one happened."""
    _open()
    _C._synchronize(_index(device))


class Stream(torch.Stream):
    """A neuron stream: an ordered queue of operators on one NeuronCore.
    Same implementation as ``torch.Stream(device="neuron")``.

    ``priority`` is as CUDA's: lower runs first, 0 is the default and the
    lowest, ``Stream.priority_range()[1]`` the highest; values outside the
    range are clamped. A ready command of a higher-priority stream runs at
    the core's next command boundary (docs/neuron-rtd.md, "How a core is
    shared")."""

    def __new__(cls, device=None, priority=0, **kwargs):
        _open()
        if "stream_id" in kwargs:
            return super().__new__(cls, **kwargs)
        return super().__new__(cls, device=torch.device("neuron", _index(device)), priority=priority)

    @property
    def priority(self):
        return _C._stream_priority(self.device_index, self.stream_id)

    @staticmethod
    def priority_range():
        """(lowest, highest) priority, as ``torch.cuda.Stream.priority_range()``."""
        _open()
        return _C._stream_priority_range()


class _NeuronEventType(type):
    def __instancecheck__(cls, instance):
        return isinstance(instance, torch.Event) and instance.device.type == "neuron"


class Event(metaclass=_NeuronEventType):
    """A point on a neuron stream's timeline: ``torch_neuronx.Event(...)``
    returns ``torch.Event(device="neuron", ...)``. Not a subclass: torch's
    own methods (``elapsed_time``, ``wait_event``) take only ``torch.Event``
    objects; ``isinstance(e, torch_neuronx.Event)`` holds for every neuron
    ``torch.Event``. ``enable_timing=True`` events carry device timestamps
    for ``elapsed_time``."""

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
        _open()
        return torch.Event(
            device="neuron", enable_timing=enable_timing, blocking=blocking,
            interprocess=interprocess,
        )


def current_stream(device=None):
    _open()
    return torch.accelerator.current_stream(_index(device))


def default_stream(device=None):
    _open()
    stream_id, device_index, device_type = _C._default_stream(_index(device))
    return torch.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type)


def set_stream(stream):
    _open()
    torch.accelerator.set_stream(stream)


@contextlib.contextmanager
def stream(stream):
    """Makes ``stream`` current on its device inside the block."""
    if stream is None:
        yield
        return
    _open()
    previous = torch.accelerator.current_stream(stream.device_index)
    torch.accelerator.set_stream(stream)
    try:
        yield stream
    finally:
        torch.accelerator.set_stream(previous)


StreamContext = stream


class device_of(device):
    """The device of ``obj`` (a tensor) current inside the block; a no-op
    for a tensor that is not on ``neuron``."""

    def __init__(self, obj):
        index = obj.get_device() if obj.device.type == "neuron" else -1
        super().__init__(index)


# What the device is. torch.neuron devices are NeuronCores; a chip (a neuron
# device, as neuronctl ls lists them) holds several.

_CHIP_NAMES = {"trainium1": "trn1", "trainium2": "trn2", "trainium3": "trn3"}
_NEURON_CORE_VERSIONS = {"trainium1": 2, "trainium2": 3, "trainium3": 4}


class _NeuronDeviceProperties:
    """What ``get_device_properties`` returns: ``name`` as AWS names the chip
    (``trn2``), ``total_memory`` the NeuronCore's share of its chip's HBM, and
    the chip's facts."""

    def __init__(self, raw):
        self.architecture = raw["architecture"]
        self.name = _CHIP_NAMES.get(self.architecture, self.architecture)
        self.neuron_core_version = _NEURON_CORE_VERSIONS.get(self.architecture, 0)
        self.instance_type = raw["instance_type"]
        self.backend = raw["backend"]
        self.neuron_device = raw["neuron_device"]
        self.core = raw["core"]
        self.cores_per_device = raw["cores_per_device"]
        self.logical_nc_config = raw["logical_nc_config"]
        self.device_total_memory = raw["device_total_memory"]
        self.total_memory = raw["device_total_memory"] // max(1, raw["cores_per_device"])

    def __repr__(self):
        return (f"_NeuronDeviceProperties(name='{self.name}', "
                f"neuron_core='NeuronCore-v{self.neuron_core_version}', "
                f"total_memory={self.total_memory // (1 << 20)}MB, core={self.core}, "
                f"neuron_device={self.neuron_device}, logical_nc_config={self.logical_nc_config}, "
                f"backend='{self.backend}')")


def get_device_properties(device=None):
    _open()
    return _NeuronDeviceProperties(_C._device_properties(_index(device)))


def get_device_name(device=None):
    """``trn2`` on Trainium2 (and on the simulated Trainium2)."""
    return get_device_properties(device).name


def get_device_capability(device=None):
    """(NeuronCore version, 0): (3, 0) on Trainium2's NeuronCore-v3."""
    return (get_device_properties(device).neuron_core_version, 0)


# Random numbers: one generator per device, seeded by torch.manual_seed.

def _generator(index):
    _open()
    return _C._default_generator(index)


def manual_seed(seed):
    """Seeds the current device's generator. Before the device is first used
    the seed applies to every device when they start (no daemon is reached)."""
    if not _C._is_initialized():
        _C._manual_seed_all(int(seed))
        return
    _generator(current_device()).manual_seed(int(seed))


def manual_seed_all(seed):
    """Seeds every device's generator; before first use, when they start.
    torch.manual_seed calls it."""
    _C._manual_seed_all(int(seed))


def seed():
    _generator(current_device()).seed()


def seed_all():
    for index in range(device_count()):
        _generator(index).seed()


def initial_seed():
    return _generator(current_device()).initial_seed()


def get_rng_state(device="neuron"):
    return _generator(_index(device)).get_state()


def set_rng_state(new_state, device="neuron"):
    _generator(_index(device)).set_state(new_state)


def get_rng_state_all():
    return [get_rng_state(index) for index in range(device_count())]


def set_rng_state_all(new_states):
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


# Memory: the caching allocator's statistics.

def _flatten(prefix, value, out):
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(f"{prefix}.{key}" if prefix else key, item, out)
    else:
        out[prefix] = value


def memory_stats(device=None):
    """Statistics of the caching allocator, flattened as CUDA's are
    ("allocated_bytes.all.current", ...)."""
    _open()
    out = {}
    _flatten("", _C._memory_stats(_index(device)), out)
    return dict(sorted(out.items()))


def memory_allocated(device=None):
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None):
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device=None):
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None):
    return memory_stats(device)["reserved_bytes.all.peak"]


def mem_get_info(device=None):
    """(free, total) bytes of the device's HBM, across all processes."""
    _open()
    return tuple(_C._memory_info(_index(device)))


# Per device index: the fraction set_per_process_memory_fraction last set.
_memory_fractions = {}


def set_per_process_memory_fraction(fraction, device=None):
    """Caps the device memory this process may hold on the device at
    ``fraction`` (0 to 1) of its HBM (``get_device_properties().total_memory``),
    as ``torch.cuda.set_per_process_memory_fraction``. neuron-rtd enforces the
    cap on the memory the caching allocator reserves: an allocation past it
    raises ``torch.OutOfMemoryError`` once the allocator has given back what
    it caches. 1.0 removes the cap; the daemon's own per-session quota
    applies either way."""
    _open()
    index = _index(device)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    total = mem_get_info(index)[1]
    _C._set_memory_cap(index, None if fraction == 1.0 else int(fraction * total))
    _memory_fractions[index] = fraction


def get_per_process_memory_fraction(device=None):
    """The fraction set_per_process_memory_fraction set (1.0 when none was)."""
    _open()
    return _memory_fractions.get(_index(device), 1.0)


def empty_cache():
    """Returns cached, unused device memory to neuron-rtd."""
    if _C._is_initialized():
        _C._empty_cache()


def memory_summary(device=None, abbreviated=False):
    """The caching allocator's statistics as a table, laid out as
    ``torch.cuda.memory_summary``'s (for a log line, or beside an
    out-of-memory error)."""
    from torch_neuronx._memory_summary import format_summary

    return format_summary(memory_stats(device), _index(device), abbreviated)


def reset_peak_memory_stats(device=None):
    _open()
    _C._reset_peak_memory_stats(_index(device))


def reset_accumulated_memory_stats(device=None):
    _open()
    _C._reset_accumulated_memory_stats(_index(device))


# The daemon's view of the core: every process that shares it.

def _host_core(device):
    return _C._session_info()["cores"][_index(device)]


def utilization(device=None):
    """Percent of about the last second the NeuronCore's compute engine was
    busy, for every process sharing it, as neuron-rtd measures it (as
    ``torch.cuda.utilization`` reads NVML's)."""
    _open()
    core = _host_core(device)
    for entry in _C._core_stats():
        if entry["core"] == core:
            return round(100 * entry["recent_compute_utilization"])
    raise RuntimeError(f"neuron-rtd reports no statistics of NeuronCore {core}")


def list_processes(device=None):
    """The processes that have the NeuronCore open and the device memory
    each holds (all its cores'), one line each, as
    ``torch.cuda.list_gpu_processes``; neuron-rtd knows every session, so
    the list holds other users' processes too (``neuronctl ps`` shows more)."""
    _open()
    core = _host_core(device)
    lines = [f"neuron:{_index(device)} (NeuronCore {core})"]
    sessions = [session for session in _C._list_sessions() if core in session["cores"]]
    if not sessions:
        lines.append("no processes are running")
    for session in sessions:
        megabytes = session["hbm_used_bytes"] / (1024 * 1024)
        name = " ".join(session["client_name"].split())  # a command line may hold newlines
        name = name if len(name) <= 60 else name[:57] + "..."
        lines.append(f"process {session['pid']:>10d} uses {megabytes:>12.3f} MB device memory"
                     f" ({name})")
    return "\n".join(lines)


# Autocast.

def get_amp_supported_dtype():
    return [torch.bfloat16, torch.float16]


def is_bf16_supported():
    return True


def is_autocast_enabled():
    return torch.is_autocast_enabled("neuron")


def get_autocast_dtype():
    return torch.get_autocast_dtype("neuron")


# torch.neuron.memory, as torch.cuda.memory; last, since it imports the
# functions above.
from torch_neuronx import memory  # noqa: E402
from torch_neuronx.memory import memory_snapshot  # noqa: E402,F401

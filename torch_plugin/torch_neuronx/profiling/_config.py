"""NeuronConfig: what a torch.profiler window captures on neuron."""

import enum
import json
import os

from torch._C._profiler import _ExperimentalConfig


class ProfileMode(enum.Enum):
    """What the daemon records for the profiled window."""

    #: Every command's start and end on its NeuronCore, its stream and engine.
    DEVICE = "device"
    #: Runtime work for the process: the daemon's (executable loads) and the
    #: client's (pageable memory copied through the staging arena).
    RUNTIME = "runtime"


def _parse_cores(spec):
    """'0', '0,2', '0-3', 3 or [0, 1] -> sorted device indices; None -> all."""
    if spec is None:
        return None
    if isinstance(spec, bool):
        raise TypeError(f"capture_enabled_for_nc must name cores, not {spec!r}")
    if isinstance(spec, int):
        spec = [spec]
    if isinstance(spec, str):
        cores = []
        for part in spec.replace(" ", "").split(","):
            if not part:
                continue
            first, dash, last = part.partition("-")
            if not first.isdigit() or (dash and not last.isdigit()):
                raise ValueError(
                    f"capture_enabled_for_nc={spec!r}: expected core indices like '0', '0,2' "
                    f"or '0-3'"
                )
            lo, hi = int(first), int(last) if dash else int(first)
            if hi < lo:
                raise ValueError(f"capture_enabled_for_nc={spec!r}: range {part} is empty")
            cores.extend(range(lo, hi + 1))
        spec = cores
    try:
        cores = sorted({int(core) for core in spec})
    except (TypeError, ValueError):
        raise TypeError(
            f"capture_enabled_for_nc must be a string like '0-3', an int or a list of ints, "
            f"not {spec!r}"
        ) from None
    if any(core < 0 for core in cores):
        raise ValueError(f"capture_enabled_for_nc={spec!r}: core indices are >= 0")
    return cores


class NeuronConfig(_ExperimentalConfig):
    """``experimental_config`` of ``torch.profiler.profile`` for neuron.

    Args:
        modes: :class:`ProfileMode` values (or their names); default DEVICE.
        profile_output_dir: where :class:`NeuronProfiler` writes; default
            ``./neuron_profile``.
        capture_enabled_for_nc: the ``neuron`` devices (NeuronCores of this
            process, as ``neuron:i``) captured: ``'0'``, ``'0,2'``, ``'0-3'``,
            an int or a list; default every device.
        correlate_device_time: the exported system trace and Parquet
            timestamps are Unix-epoch nanoseconds, on the CPU trace's clock
            (default); False keeps the daemon's CLOCK_MONOTONIC. The
            framework trace is always correlated.
    """

    def __init__(
        self,
        modes=(ProfileMode.DEVICE,),
        profile_output_dir=None,
        capture_enabled_for_nc=None,
        correlate_device_time=True,
    ):
        if isinstance(modes, (ProfileMode, str)):
            modes = [modes]
        parsed = []
        for mode in modes:
            try:
                parsed.append(mode if isinstance(mode, ProfileMode) else ProfileMode[mode.upper()])
            except (KeyError, AttributeError):
                names = ", ".join(m.name for m in ProfileMode)
                raise ValueError(f"unknown profile mode {mode!r}; the modes are {names}") from None
        if not isinstance(correlate_device_time, bool):
            raise TypeError("correlate_device_time must be a bool")
        self.modes = tuple(dict.fromkeys(parsed))
        self.profile_output_dir = os.fspath(profile_output_dir or "neuron_profile")
        self.capture_enabled_for_nc = _parse_cores(capture_enabled_for_nc)
        self.correlate_device_time = correlate_device_time
        # Kineto reads the custom configuration as a `KEY=value` line, where
        # '=' and '#' would break it: the JSON holds only mode names and ints.
        neuron = {"modes": [mode.value for mode in self.modes]}
        if self.capture_enabled_for_nc is not None:
            neuron["devices"] = self.capture_enabled_for_nc
        super().__init__(custom_profiler_config=json.dumps({"neuron": neuron}))

    def __repr__(self):
        return (
            f"NeuronConfig(modes={[m.name for m in self.modes]}, "
            f"profile_output_dir={self.profile_output_dir!r}, "
            f"capture_enabled_for_nc={self.capture_enabled_for_nc}, "
            f"correlate_device_time={self.correlate_device_time})"
        )

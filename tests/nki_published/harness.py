"""What a case is, how its kernel runs in each mode, and how its outputs are
judged. Drivers (cases_legacy.py, cases_current.py) register cases with
@case; run.py runs each in a worker process with run_case()."""

import dataclasses
import importlib
import os
import re
import sys
import time
import traceback

import torch

# Where each source's checkout comes from (the run.py option of the same
# name says which commit).
SOURCES = ("neuron-sdk-legacy", "neuron-sdk", "nki-samples", "nki-samples-reference",
           "nki-library")

CASES = {}


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    namespace: str        # "legacy" (neuronxcc.nki) or "current" (nki)
    source: str           # one of SOURCES
    module: str           # the published module the driver imports
    path: str             # directory (in the checkout) put first on sys.path
    driver: object        # driver(module, runner) -> list of Check


def case(name, namespace, source, module, path):
    """Registers the decorated driver as a case."""
    assert source in SOURCES and namespace in ("legacy", "current")

    def register(driver):
        assert name not in CASES, name
        CASES[name] = Case(name, namespace, source, module, path, driver)
        return driver

    return register


@dataclasses.dataclass
class Check:
    """One output against its golden: |actual - golden| <= atol + rtol*|golden|."""
    label: str
    actual: object
    golden: object
    rtol: float
    atol: float


def check(label, actual, golden, rtol=None, atol=None):
    """A Check with the tolerance suited to the golden's dtype unless given."""
    golden = _as_tensor(golden)
    default_rtol, default_atol = tolerance(golden.dtype)
    return Check(label, actual, golden, default_rtol if rtol is None else rtol,
                 default_atol if atol is None else atol)


def tolerance(dtype):
    """(rtol, atol) for an output stored in `dtype`: a few units of its last
    place for 16-bit outputs (rounded once, on the store); for float32, room
    for float32 accumulation in another order than the golden's."""
    if dtype == torch.bfloat16:
        return 2e-2, 2e-2
    if dtype == torch.float16:
        return 2e-3, 2e-3
    if dtype.is_floating_point:
        return 1e-4, 1e-5
    return 0.0, 0.0


class Runner:
    """Runs published kernels in one mode. `simulate`: in this process, with
    the namespace's own simulator entry point; `device`: on neuron tensors,
    outputs copied back to the CPU."""

    def __init__(self, mode, namespace):
        self.mode = mode
        self.namespace = namespace
        self._device_copies = {}

    @property
    def nki(self):
        """The namespace's package: neuronxcc.nki for legacy cases, else nki."""
        return importlib.import_module("neuronxcc.nki" if self.namespace == "legacy" else "nki")

    def kernel(self, kernel, *args, **kwargs):
        """Runs an @nki.jit kernel (indexed with its launch grid if it has one)."""
        args, kwargs = self._to_device(args, kwargs)
        if self.mode == "device":
            return _to_cpu(kernel(*args, **kwargs))
        if self.namespace == "legacy":
            return _to_cpu(self.nki.simulate_kernel(kernel, *args, **kwargs))
        return _to_cpu(self.nki.simulate(kernel)(*args, **kwargs))

    def host(self, function, *args, **kwargs):
        """Runs a published host function that launches kernels itself (a
        launch-grid wrapper): CPU tensors make its kernels simulate."""
        args, kwargs = self._to_device(args, kwargs)
        return _to_cpu(function(*args, **kwargs))

    def written(self, tensor):
        """`tensor`, an argument the kernel wrote, as the kernel left it."""
        return _to_cpu(self._device_copies.get(id(tensor), tensor))

    def _to_device(self, args, kwargs):
        if self.mode != "device":
            return args, kwargs

        def move(value):
            if not isinstance(value, torch.Tensor):
                return value
            copy = value.to("neuron")
            self._device_copies[id(value)] = copy
            return copy

        return [move(a) for a in args], {k: move(v) for k, v in kwargs.items()}


def _to_cpu(value):
    if isinstance(value, (tuple, list)):
        return type(value)(_to_cpu(v) for v in value)
    if isinstance(value, torch.Tensor) or type(value).__module__ == "numpy":
        return _as_tensor(value).cpu()
    return value


def _as_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    # NumPy arrays, including ml_dtypes' bfloat16 (which torch cannot wrap).
    if str(getattr(value, "dtype", "")) == "bfloat16":
        return torch.from_numpy(value.astype("float32")).to(torch.bfloat16)
    return torch.as_tensor(value)


def judge(checks):
    """(status, detail): PASS, or FAIL naming the worst output."""
    failures = []
    for item in checks:
        actual = _as_tensor(item.actual).detach().cpu()
        golden = item.golden.detach().cpu()
        if tuple(actual.shape) != tuple(golden.shape):
            failures.append(f"{item.label}: shape {tuple(actual.shape)}, expected "
                            f"{tuple(golden.shape)}")
            continue
        actual, golden = actual.double(), golden.double()
        if torch.isnan(actual).any() and not torch.isnan(golden).any():
            failures.append(f"{item.label}: {int(torch.isnan(actual).sum())} NaN")
            continue
        error = (actual - golden).abs()
        allowed = item.atol + item.rtol * golden.abs()
        if bool((error > allowed).any()):
            bad = int((error > allowed).sum())
            failures.append(f"{item.label}: max abs err {float(error.max()):.3g} "
                            f"({bad}/{error.numel()} over rtol {item.rtol:g} atol {item.atol:g})")
    if failures:
        return "FAIL", "; ".join(failures)
    return "PASS", ", ".join(c.label for c in checks)


def describe_error(error, root):
    """(cause, detail) of an exception. The detail is its type and first
    line, and where in the published code (under `root`) it was raised;
    the cause is what groups cases failing alike (see normalize_cause)."""
    lines = str(error).strip().splitlines()
    message = f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    where = None
    for frame in traceback.extract_tb(error.__traceback__):
        if os.path.abspath(frame.filename).startswith(root):
            where = f"{os.path.basename(frame.filename)}:{frame.lineno}"
    detail = f"{message} [{where}]" if where else message
    if isinstance(error, ModuleNotFoundError) and error.name and \
            error.name.split(".")[0] not in ("nki", "neuronxcc"):
        return f"third-party module missing: {error.name.split('.')[0]}", detail
    return normalize_cause(message), detail


def normalize_cause(message):
    """`message` without what names one kernel: its name, the daemon's
    address, an instruction's index and line, temporary tiles' names."""
    cause = re.sub(r"neuron-rtd at \S+: |(NKI )?kernel '[^']*'(: | )?", "", message)
    cause = re.sub(r"instruction \d+ ?(\((\w+)\))?( at \S+?:\d+)?: ",
                   lambda match: f"{match.group(2)}: " if match.group(2) else "", cause)
    cause = re.sub(r"'t\d+'", "'t'", cause)
    return re.sub(r" *\(?(at )?[\w<>./-]+\.py:\d+\)?", "", cause)


def run_case(case_, checkout, mode):
    """Imports the case's published module from `checkout` and runs its
    driver; returns the result record run.py prints."""
    started = time.perf_counter()
    result = {"case": case_.name, "mode": mode}
    try:
        import nki  # noqa: F401  (the project's package, before any checkout path)
        try:
            import neuronxcc  # noqa: F401  (the project's alias package, when shipped)
        except ImportError:
            pass  # the legacy cases then fail at their own import, as they would for a user
        sys.path.insert(0, os.path.join(checkout, case_.path))
        torch.manual_seed(0)
        module = importlib.import_module(case_.module)
        checks = case_.driver(module, Runner(mode, case_.namespace))
        result["status"], result["detail"] = judge(checks)
    except Exception as error:  # every failure is a result to report
        result["status"] = "ERROR"
        root = os.path.abspath(checkout) + os.sep
        result["cause"], result["detail"] = describe_error(error, root)
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result

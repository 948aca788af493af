"""What the neuron backend's graph compilers return: an Inductor OutputCode,
so that AOTAutograd's own cache (AOTAutogradCache, bundled entries) can keep
the whole capture of a graph on disk and a second process skips AOTAutograd's
tracing and the lowering.

A graph lowered whole is kept as its GraphPlan, which is data: a cache hit
loads it into the daemon again (where it usually still is, compiled). A
graph that runs in part on the client holds Python callables and is not
cached.
"""

import dataclasses
import functools
import hashlib
import pathlib

import torch
from torch._inductor.output_code import OutputCode

from torch_neuronx._dynamo import _lowering


@dataclasses.dataclass
class NeuronGraphCode(OutputCode):
    """One ATen graph as neuron-rtd runs it. Called boxed (a list of inputs)."""

    # A graph lowered whole, as data (cacheable)...
    plan: _lowering.GraphPlan | None = None
    # ... or one that runs in part on the client: a callable taking the
    # inputs as arguments (not cacheable).
    module: object = None
    # Every graph the backend made, for torch_neuronx.compiled_graphs();
    # what this one adds to it.
    listing: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        self._boxed_call = True
        self._run = None
        if self.plan is not None:
            self._load()
        else:
            self._run = lambda args: self.module(*args)

    def _load(self):
        from torch_neuronx._dynamo import _graphs

        run = _lowering.load(self.plan)
        self._run = run
        self.listing["executables"] = [getattr(run, "executable", run)]
        _graphs.append(self.listing)

    def __call__(self, inputs):
        return self._run(inputs)

    def prepare_for_serialization(self):
        from torch._functorch._aot_autograd.autograd_cache import BypassAOTAutogradCache

        if self.plan is None or self.plan.attributes:
            raise BypassAOTAutogradCache(
                f"graph {self.listing.get('name')} runs in part on the client "
                "or holds module constants")
        self._run = None
        self.listing = {key: value for key, value in self.listing.items()
                        if key != "executables"}

    def post_compile(self, example_inputs, constants, graph_kwargs):
        if self._run is None:
            self._load()

    def set_triton_bundle(self, triton_bundle):
        pass

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_run", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._run = None


@functools.cache
def _lowering_digest():
    """The lowering's Python source and the extension that loads its plans."""
    from torch_neuronx import _C

    digest = hashlib.sha256()
    for path in sorted(pathlib.Path(__file__).parent.glob("*.py")):
        digest.update(path.read_bytes())
    with open(_C.__file__, "rb") as extension:
        for block in iter(lambda: extension.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def cache_key_tag():
    """What sets the neuron backend's entries in PyTorch's compile caches
    apart: the lowering's own code, so that a changed torch_neuronx never
    reuses a graph planned by another; the user's own tag is kept."""
    return f"{torch.compiler.config.cache_key_tag}|torch_neuronx:{_lowering_digest()}"

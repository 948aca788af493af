"""nki.language's random numbers over the core's generator (nki.isa.rand2,
set_rng_seed, dropout)."""

from nki import isa as nisa
from nki._nl_memory import full, ndarray
from nki._tensor import NkiTensor
from nki._trace import sbuf


def rand(shape, dtype, buffer=sbuf, name=""):
    """A tile of uniform values in [0, 1)."""
    tile = ndarray(shape, dtype, buffer, name)
    nisa.rand2(tile, 0.0, 1.0)
    return tile


def random_seed(seed):
    """Restarts the generator from `seed` (a [1, 1] tile, or a number)."""
    if not isinstance(seed, NkiTensor):
        seed = full((1, 1), int(seed), "uint32")
    nisa.set_rng_seed(seed)


def dropout(x, rate, dtype=None):
    """x with each element zeroed with probability `rate` (a number or a
    [P, 1] tile); the others are kept as they are (no rescaling, as AWS
    documents)."""
    out = ndarray(x.shape, dtype or x.dtype, sbuf)
    nisa.dropout(out, x, rate)
    return out

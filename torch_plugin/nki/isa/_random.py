"""Random numbers: the core's generator (nki.isa.rng, rand2, dropout,
set_rng_seed) and nki.language's rand, random_seed and dropout over it.
The generator is the simulated core's own (xorshift64*), seeded by
set_rng_seed: AWS documents neither its XORWOW state layout nor its
sequence, so results are random as on hardware but not the same numbers."""

from nki import _dtypes, _trace
from nki._errors import fail
from nki.isa._checks import check_on_chip, elements_match, engine_view, partitions_match, \
    per_partition


def rng(dst, engine=None, name=None):
    """dst = random bits (each element the low bits of a 32-bit draw)."""
    dst = engine_view(dst, "dst", "rng")
    if _dtypes.is_float(dst.dtype):
        fail("err_unsupported_dtype", "rng writes integer tiles (int8/16/32, uint8/16/32)")
    _trace.current().record("random", [dst], scalars=[0.0, 0.0], flags=[True])


def rand2(dst, min, max, name=None):  # noqa: A002 - nki.isa's names
    """dst = uniform values in [min, max)."""
    dst = engine_view(dst, "dst", "rand2")
    if not all(isinstance(v, (int, float)) for v in (min, max)):
        fail("err_invalid_operand", "rand2's min and max are numbers here (per-partition bounds "
             "are not supported)")
    if not min < max:
        fail("err_invalid_operand", f"rand2 needs min < max; got {min} and {max}")
    _trace.current().record("random", [dst], scalars=[float(min), float(max)], flags=[False])


def dropout(dst, data, prob, name=None):
    """dst = 0 with probability prob (a number or [P, 1]), else data."""
    dst = engine_view(dst, "dst", "dropout")
    data = engine_view(data, "data", "dropout")
    partitions_match("dropout", dst=dst, data=data)
    elements_match("dropout", dst, data, "data")
    tile, value = per_partition(prob, data, "prob", "dropout")
    _trace.current().record("dropout", [dst, data, tile], scalars=[value])


def set_rng_seed(src_seeds, name=None):
    """Restarts the core's generator from the value in src_seeds [1, 1]."""
    seed = check_on_chip(src_seeds, "src_seeds", "set_rng_seed").compute_view()
    if seed.size != 1:
        fail("err_shape_mismatch", f"set_rng_seed reads one value ([1, 1]); got "
             f"{list(seed.shape)}")
    _trace.current().record("set_rng_seed", [seed], writes=())

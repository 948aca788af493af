"""The skip list of PyTorch's own tests vendored here (the package's
__init__.py points their harness at neuron; tests/conftest.py starts the
daemon every rank uses).

Each entry is `file::Class` or `file::Class::test` with the reason it does
not run. An entry that matches nothing in a file collected whole fails the
collection, so the list cannot go stale silently.
"""

import os

import pytest

# Why a test is not run, by kind (docs/distributed.md lists them too).
EIGHT_RANKS = ("world size 8 (2-D and 3-D meshes of 8 ranks): the simulated host has 2 "
               "neuron devices, and the harness would run it on the CPU with gloo")
CUDA_ONLY = "checks CUDA only: without CUDA it returns at once, checking nothing"
# The stored version of test_dtensor.py is older than torch 2.13: 2.13's
# assertEqual refuses two DTensors of different placements, which this test
# compares (its later versions compare otherwise). It fails the same on the
# CPU with gloo.
OLDER_THAN_2_13 = ("version skew: compares DTensors of placements Shard(0) and Replicate(), "
                   "which torch 2.13's assertEqual refuses (fails the same on the CPU with gloo)")

SKIPS = {
    "test_dtensor.py::DTensorMeshTest": EIGHT_RANKS,
    "test_dtensor.py::TestDTensorPlacementTypes": EIGHT_RANKS,
    "test_dtensor.py::DTensorLogTest::test_dtensor_log": CUDA_ONLY,
    "test_dtensor.py::DTensorTest::test_dtensor_new_empty_strided": OLDER_THAN_2_13,
}


HERE = os.path.dirname(os.path.abspath(__file__))


def _matches(item, entry: str) -> bool:
    rest = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else ""
    file, _, name = entry.partition("::")
    return (str(item.path) == os.path.join(HERE, file)
            and (rest + "::").startswith(name + "::"))


def pytest_collection_modifyitems(config, items):
    items = [item for item in items if os.path.dirname(str(item.path)) == HERE]
    collected_files = {os.path.basename(str(item.path)) for item in items}
    used = set()
    for item in items:
        for entry, reason in SKIPS.items():
            if _matches(item, entry):
                item.add_marker(pytest.mark.skip(reason=reason))
                used.add(entry)
    stale = [e for e in SKIPS if e.split("::", 1)[0] in collected_files and e not in used]
    whole_files = not (config.option.keyword or config.option.markexpr
                       or any("::" in arg for arg in config.args))
    if stale and whole_files:
        raise pytest.UsageError(f"tests/python/upstream/conftest.py: skip entries match "
                                f"no collected test: {stale}")

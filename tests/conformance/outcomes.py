"""Per-sample outcomes of the conformance suite, summed for its pass rate."""

import collections
import enum


class Outcome(enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    FELL_BACK = "fell back to the CPU"
    DEVICE_UNUSABLE = "left the device unusable"


# (operator, mode) -> Counter of outcomes; `declared` holds the pairs of
# expected_failures.py, kept out of the rate.
counts = collections.defaultdict(collections.Counter)
declared = set()


def record(name, mode, outcome, expected_reason):
    counts[(name, mode)][outcome] += 1
    if expected_reason:
        declared.add((name, mode))


def summary():
    """(passed, total) over samples outside the declared list, and the
    outcome counts of the declared ones."""
    passed = total = 0
    declared_counts = collections.Counter()
    for key, counter in counts.items():
        if key in declared:
            declared_counts.update(counter)
            continue
        passed += counter[Outcome.PASSED]
        total += sum(counter.values())
    return passed, total, declared_counts

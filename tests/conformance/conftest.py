"""The conformance suite's pass rate, printed at the end of a run."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def pytest_terminal_summary(terminalreporter):
    from outcomes import Outcome, counts, summary

    if not counts:
        return
    passed, total, declared = summary()
    rate = 100.0 * passed / total if total else 100.0
    terminalreporter.write_line(
        f"conformance: {passed}/{total} samples pass ({rate:.2f}%) outside the declared list; "
        f"declared: {sum(declared.values())} samples ({declared[Outcome.PASSED]} of them pass)")
    for outcome in (Outcome.FAILED, Outcome.FELL_BACK, Outcome.DEVICE_UNUSABLE):
        failing = sorted(f"{name}-{mode}" for (name, mode), counter in counts.items()
                         if counter[outcome] and not _is_declared(name, mode))
        if failing:
            terminalreporter.write_line(f"  {outcome.value}: {len(failing)}: {' '.join(failing)}")


def _is_declared(name, mode):
    from outcomes import declared

    return (name, mode) in declared

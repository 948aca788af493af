"""The model suite: `N/M models` at the end of a run, for deploy/dev.sh models."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def pytest_terminal_summary(terminalreporter):
    def models(outcome):
        return [report for report in terminalreporter.stats.get(outcome, [])
                if "test_models.py" in report.nodeid]

    passed, failed = len(models("passed")), len(models("failed"))
    if passed + failed:
        terminalreporter.write_line(f"{passed}/{passed + failed} models")

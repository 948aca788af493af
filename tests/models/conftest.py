"""The model suite: `N/M models` at the end of a run, for deploy/dev.sh models."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def pytest_terminal_summary(terminalreporter):
    passed = len(terminalreporter.stats.get("passed", []))
    failed = len(terminalreporter.stats.get("failed", []))
    if passed + failed:
        terminalreporter.write_line(f"{passed}/{passed + failed} models")

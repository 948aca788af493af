"""--aws-api-tests: AWS's own NKI API example tests (test_nki_*.py), run
with pytest from the user's checkout, one file per process, and summarized
per file and by first error line."""

import collections
import glob
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

from harness import normalize_cause

# Where each checkout keeps its API tests.
TEST_DIRECTORIES = {"neuron-sdk-legacy": "general/nki/test", "neuron-sdk": "nki/test"}


def run_file(path, timeout):
    """(counts, failures) of one test file: counts by outcome; failures as
    (test name, first line of its error)."""
    with tempfile.TemporaryDirectory() as scratch:
        report = os.path.join(scratch, "report.xml")
        command = [sys.executable, "-m", "pytest", path, "-q", "-p", "no:cacheprovider",
                   "-o", "addopts=", f"--junitxml={report}", f"--rootdir={os.path.dirname(path)}"]
        try:
            completed = subprocess.run(command, cwd=os.path.dirname(path), capture_output=True,
                                       text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"timeout": 1}, [(os.path.basename(path), f"timed out after {timeout} s")]
        if not os.path.exists(report):
            tail = (completed.stderr or completed.stdout).strip().splitlines()
            return {"errors": 1}, [(os.path.basename(path), tail[-1] if tail else "pytest crashed")]
        return _parse_report(report)


def _parse_report(report):
    counts = collections.Counter()
    failures = []
    for test in ElementTree.parse(report).getroot().iter("testcase"):
        outcome = next((child for child in test if child.tag in ("failure", "error", "skipped")),
                       None)
        if outcome is None:
            counts["passed"] += 1
            continue
        counts["skipped" if outcome.tag == "skipped" else
               "failed" if outcome.tag == "failure" else "errors"] += 1
        if outcome.tag != "skipped":
            failures.append((test.get("name"), _first_error_line(outcome)))
    return counts, failures


def _first_error_line(outcome):
    """The exception pytest reported (its `E   Type: message` line; a
    collection failure's message attribute says only that), without the
    exception's module."""
    for line in (outcome.text or "").splitlines():
        found = re.match(r"E\s+(?:[\w.]+\.)?(\w+(?:Error|Exception|Exit): .*)", line)
        if found:
            return found.group(1)
    message = (outcome.get("message") or "?").strip()
    return message.splitlines()[0] if message else "?"


def run_all(checkouts, timeout, only=None):
    """Runs the test files of the given checkouts (those whose name contains
    a text of `only`, if given); prints the per-file table and the failures
    grouped by message; returns (tests passed, tests run)."""
    rows, by_message = [], collections.defaultdict(list)
    for source, directory in TEST_DIRECTORIES.items():
        if source not in checkouts:
            print(f"(no --{source}: its API tests are skipped)")
            continue
        for path in sorted(glob.glob(os.path.join(checkouts[source], directory, "test_*.py"))):
            name = f"{source}/{os.path.basename(path)}"
            if only and not any(text in name for text in only):
                continue
            counts, failures = run_file(path, timeout)
            rows.append((name, counts))
            for test, message in failures:
                by_message[normalize_cause(message)[:160]].append(f"{name}::{test}")
            print(f"  {name}: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())),
                  file=sys.stderr, flush=True)

    print(f"\n{'API test file':<58} {'passed':>6} {'failed':>6} {'errors':>6} {'skipped':>7}")
    for name, counts in rows:
        errors = counts["errors"] + counts["timeout"]
        print(f"{name:<58} {counts['passed']:>6} {counts['failed']:>6} {errors:>6} "
              f"{counts['skipped']:>7}")
    if by_message:
        print("\nFirst error line of each failing test, most frequent first:")
        for message, tests in sorted(by_message.items(), key=lambda item: -len(item[1])):
            print(f"{len(tests):>4}  {message}\n      e.g. {', '.join(tests[:3])}")
    passed = sum(counts["passed"] for _, counts in rows)
    total = sum(sum(counts.values()) - counts["skipped"] for _, counts in rows)
    files_passed = sum(1 for _, c in rows if c["passed"] and
                       not (c["failed"] or c["errors"] or c["timeout"]))
    print(f"\n{passed}/{total} AWS API tests pass ({files_passed}/{len(rows)} files)")
    return passed, total

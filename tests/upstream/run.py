"""Runs PyTorch's own device-generic test suites on the `neuron` device.

PyTorch's test files (test/test_ops.py, test/test_torch.py, ...) instantiate
their device-generic classes for every available device type; with
PYTORCH_TESTING_DEVICE_ONLY_FOR=neuron they are instantiated for neuron alone
(PyTorch's PrivateUse1TestBase). The tests are not part of this repository:
point the runner at a PyTorch source checkout, ideally of the commit the
installed torch was built from (`torch.version.git_version`).

    .venv/bin/python tests/upstream/run.py --pytorch-src ~/src/pytorch
    .venv/bin/python tests/upstream/run.py --pytorch-src DIR --only test_view_ops.py
    deploy/dev.sh upstream-tests --pytorch-src DIR [--only FILE]

Each file runs in its own pytest process (cwd DIR/test) with a time limit,
against one neuron-rtd that the runner starts for the whole run; the pytest
process records every test's outcome as it happens, so a file that hangs or
crashes still reports the tests it finished and the one it was in. Failures
are grouped into classes by the first line of their error, numbers, shapes
and quoted names normalized away, and compared with the expected-failure list
tests/upstream_xfail.json (entries {"id", "reason", "class"}). The run fails
(exit status 1) on a failure not in the list, on a listed test that passes
or no longer exists (the list goes stale loudly), and on a file that timed
out or crashed. --write-xfail rewrites the list's entries for the files that
ran from their current failures, reason "TODO", to be filled in by hand.

Options: --pytorch-src DIR (required), --only FILE (repeatable), --timeout S
(per file, default 1800), --jobs N (files at once, default 1), --write-xfail,
--sim-preset NAME (the daemon's simulated device, default trn2.3xlarge),
--no-cpu-rerun (by default a file's failures are rerun on the CPU, and those
that fail there too are counted apart: the suite's, not the device's),
--xfail-file PATH (another list than tests/upstream_xfail.json), --log-dir DIR
(pytest logs and outcome records; default a new temporary directory), --json
PATH (every test's outcome and message, for tooling).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
XFAIL_PATH = REPO_ROOT / "tests" / "upstream_xfail.json"

# PyTorch's device-generic suites, cheapest first so a run with a small time
# budget still covers the most files.
DEFAULT_FILES = (
    "test_shape_ops.py",
    "test_view_ops.py",
    "test_type_promotion.py",
    "test_sort_and_select.py",
    "test_indexing.py",
    "test_foreach.py",
    "test_unary_ufuncs.py",
    "test_modules.py",
    "test_binary_ufuncs.py",
    "test_reductions.py",
    "test_tensor_creation_ops.py",
    "test_linalg.py",
    "test_autograd.py",
    "test_nn.py",
    "test_torch.py",
    "test_ops.py",
)

# Every instantiated device-generic test carries the device name: test names
# end in `_neuron[_dtype]`. Plain TestCase classes would only test the CPU.
KEYWORD = "neuron"

# After SIGINT pytest stops at the current test and prints its summary; a
# process that ignores it this long (blocked in native code) is killed.
INTERRUPT_GRACE_S = 30

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
# A test that fails on neuron and, rerun on the CPU, fails there as well: the
# suite's own problem (a checkout newer than the installed torch, a NumPy
# that removed a function), not the device's. Counted apart, not in the
# pass rate and not in the expected-failure list.
CPU_TOO = "fails on the CPU too"


@dataclasses.dataclass
class CaseResult:
    id: str
    outcome: str
    message: str = ""


@dataclasses.dataclass
class FileRun:
    name: str
    results: list[CaseResult]
    seconds: float
    problem: str = ""  # "timed out after N s", "crashed (...)": the file did not finish
    log: Path | None = None


# --- the daemon -------------------------------------------------------------


def start_daemon(socket_dir: Path, log_path: Path, preset: str) -> subprocess.Popen:
    """Starts a neuron-rtd of this run's own, simulating `preset`, on a socket
    in `socket_dir` and returns once it serves (its sd_notify READY=1), so
    every test file talks to the same daemon and none depends on a
    developer's running one."""
    import torch_neuronx

    config = socket_dir / "neuron-rtd.toml"
    config.write_text(f'[sim]\npreset = "{preset}"\n')
    notify_path = socket_dir / "notify.sock"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(notify_path))
    notify.settimeout(120)
    with open(log_path, "w") as log:
        daemon = subprocess.Popen(
            [torch_neuronx._daemon_binary(), "--config", str(config),
             "--socket", str(socket_dir / "neuron-rtd.sock")],
            stdout=log, stderr=subprocess.STDOUT,
            env=dict(os.environ, NOTIFY_SOCKET=str(notify_path)),
        )
    try:
        while b"READY=1" not in notify.recv(4096):
            pass
    finally:
        notify.close()
    return daemon


def stop_daemon(daemon: subprocess.Popen) -> int | None:
    """Stops the daemon; returns its exit status if it had already exited,
    which means the files after that point ran without a device."""
    early_exit = daemon.poll()
    daemon.terminate()
    try:
        daemon.wait(timeout=30)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()
    return early_exit


# --- running one file -------------------------------------------------------

# The runner starts each pytest as `run.py CHILD_FLAG OUTCOMES -- ARGS`: the
# same script, so that the recorder below is in the pytest process without a
# plugin file of its own in the checkout or on sys.path.
CHILD_FLAG = "--pytest-child"


def pytest_argv(test_file: str, outcomes: Path, config: Path, test_dir: Path) -> list[str]:
    # An empty ini of our own (and rootdir test/) keeps the checkout's
    # pytest.ini addopts, which may name plugins this venv lacks, out of the
    # run; the checkout's test/conftest.py still applies.
    return [
        sys.executable, str(Path(__file__).resolve()), CHILD_FLAG, str(outcomes), "--",
        test_file, "-c", str(config), "--rootdir", str(test_dir),
        "-p", "no:cacheprovider", "-k", KEYWORD, "-v", "--tb=short",
    ]


def child_environment(socket_path: Path, work_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "PYTORCH_TESTING_DEVICE_ONLY_FOR": "neuron",
        "NEURON_RTD_ADDRESS": f"unix:{socket_path}",
        # A test process never starts a daemon of its own: a lost daemon
        # must show as errors, not be papered over by a fresh one.
        "NEURON_RTD_AUTOSTART": "0",
        "TORCHINDUCTOR_CACHE_DIR": str(work_dir / "inductor-cache"),
    })
    return env


def run_pytest(command: list[str], cwd: Path, env: dict[str, str], log_path: Path,
               timeout: float) -> tuple[int | None, bool]:
    """Runs pytest; returns (exit status, whether it timed out). On timeout
    pytest is interrupted (SIGINT) so that it can still print its summary,
    and killed if it does not stop: a test blocked in native code never sees
    the interrupt. The outcomes are recorded as they happen either way."""
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            return process.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGINT)
        try:
            return process.wait(timeout=INTERRUPT_GRACE_S), True
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            return process.wait(), True


def cpu_test_id(test_id: str) -> str:
    """The CPU's instance of a neuron test: `TestFooPRIVATEUSE1::test_x_neuron_float32`
    (or a `...NEURON` class) is `TestFooCPU::test_x_cpu_float32`."""
    path, test_class, name = test_id.split("::", 2)
    test_class = re.sub(r"(PRIVATEUSE1|NEURON)$", "CPU", test_class)
    name = re.sub(r"_neuron(?=_|$|\[)", "_cpu", name, count=1)
    return f"{path}::{test_class}::{name}"


def rerun_failures_on_cpu(run: FileRun, test_dir: Path, log_dir: Path, timeout: float) -> None:
    """Reruns the file's failed tests on the CPU; those that fail there too
    become CPU_TOO (see there)."""
    failed = {cpu_test_id(result.id): result for result in run.results
              if result.outcome == FAILED and result.id.count("::") == 2}
    if not failed:
        return
    stem = Path(run.name).stem
    outcomes, log = log_dir / f"{stem}.cpu.outcomes.jsonl", log_dir / f"{stem}.cpu.log"
    outcomes.unlink(missing_ok=True)
    command = [sys.executable, str(Path(__file__).resolve()), CHILD_FLAG, str(outcomes), "--",
               *sorted(failed), "-c", str(log_dir / "pytest.ini"), "--rootdir", str(test_dir),
               "-p", "no:cacheprovider", "-q", "--tb=no"]
    env = dict(os.environ, PYTORCH_TESTING_DEVICE_ONLY_FOR="cpu",
               TORCHINDUCTOR_CACHE_DIR=str(log_dir / "inductor-cache"))
    run_pytest(command, test_dir, env, log, timeout)
    cpu_results, _ = read_outcomes(outcomes)
    for cpu_result in cpu_results:
        if cpu_result.outcome == FAILED and cpu_result.id in failed:
            neuron_result = failed[cpu_result.id]
            neuron_result.outcome = CPU_TOO
            neuron_result.message = f"{neuron_result.message}\n(on the CPU: {cpu_result.message})"


def run_file(test_file: str, test_dir: Path, log_dir: Path, socket_path: Path,
             timeout: float) -> FileRun:
    stem = Path(test_file).stem
    outcomes, log = log_dir / f"{stem}.outcomes.jsonl", log_dir / f"{stem}.log"
    outcomes.unlink(missing_ok=True)
    start = time.monotonic()
    status, timed_out = run_pytest(
        pytest_argv(test_file, outcomes, log_dir / "pytest.ini", test_dir),
        test_dir, child_environment(socket_path, log_dir), log, timeout)
    seconds = time.monotonic() - start
    results, running = read_outcomes(outcomes)
    problem = ""
    if timed_out:
        # The test running at the deadline was interrupted, not failed; its
        # name tells where a hang is.
        problem = f"timed out after {timeout:.0f} s" + (f" while running {running}" if running else "")
    elif status not in (0, 1, 5):  # 5: nothing selected
        problem = f"pytest exited with status {status}"
        if status is not None and status < 0:
            problem = f"crashed ({signal.Signals(-status).name})"
        if running:
            # The test it was running is the one that brought it down.
            results.append(CaseResult(running, FAILED, f"{problem} while this test ran"))
    return FileRun(test_file, results, seconds, problem, log)


# --- recording pytest's results (in the pytest process) --------------------------


class OutcomeRecorder:
    """A pytest plugin writing one JSON line per event as it happens, so that
    a file that hangs or crashes still reports every test it finished and
    names the one it was in (pytest's own reports are written at its end)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, **record) -> None:
        self.stream.write(json.dumps(record) + "\n")

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.write(start=nodeid)

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        self.write(end=nodeid)

    def pytest_runtest_logreport(self, report) -> None:
        # Setup and teardown matter only when they fail or skip the test.
        if report.when == "call" or not report.passed:
            self.write(id=report.nodeid, outcome=report_outcome(report),
                       message=report_message(report))

    def pytest_collectreport(self, report) -> None:
        if report.failed:  # typically an ImportError of version skew
            self.write(id=report.nodeid, outcome=FAILED, message=report_message(report))


def report_outcome(report) -> str:
    if report.passed and hasattr(report, "wasxfail"):
        return FAILED  # an expected failure that passes (XPASS)
    return {"passed": PASSED, "skipped": SKIPPED}.get(report.outcome, FAILED)


def report_message(report) -> str:
    if report.passed:
        return "unexpectedly passed" if hasattr(report, "wasxfail") else ""
    if report.skipped and isinstance(report.longrepr, tuple):
        return report.longrepr[2]  # (path, line, reason)
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    # A collection error is plain text; its exception is the `E` line.
    text = report.longreprtext
    exception = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    return exception[0] if exception else text


def pytest_child(outcomes: Path, pytest_args: list[str]) -> int:
    import pytest

    # As under `python -m pytest`, the working directory (test/) comes first
    # on sys.path, not this script's directory.
    sys.path[0] = os.getcwd()
    with open(outcomes, "a", buffering=1) as stream:
        return int(pytest.main(pytest_args, plugins=[OutcomeRecorder(stream)]))


# --- reading pytest's results ------------------------------------------------

# A test reports per phase (setup, call, teardown): a failing phase decides
# its outcome, then a skip, then the call passing.
OUTCOME_RANK = {PASSED: 0, SKIPPED: 1, FAILED: 2, CPU_TOO: 2}


def read_outcomes(path: Path) -> tuple[list[CaseResult], str | None]:
    """Every test's outcome, and the test that started but did not finish
    (the process ended in it) if any."""
    results: dict[str, CaseResult] = {}
    running = None
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # the last line of a killed process
            continue
        if "start" in record:
            running = record["start"]
        elif "end" in record:
            running = None
        else:
            result = CaseResult(record["id"], record["outcome"], record["message"])
            previous = results.get(result.id)
            if previous is None or OUTCOME_RANK[result.outcome] > OUTCOME_RANK[previous.outcome]:
                results[result.id] = result
    return list(results.values()), running


# --- failure classes ----------------------------------------------------------

NORMALIZERS = (
    (re.compile(r"\x1b\[[0-9;]*m"), ""),  # terminal colours
    (re.compile(r"unix:\S+|(?<![\w.])/[\w.+-]+(/[\w.+-]+)+"), "PATH"),  # sockets, files
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "N"),
    (re.compile(r"'[^'\s]*'|\"[^\"\s]*\"|`[^`\s]*`"), "'*'"),  # op, argument, backend names
    (re.compile(r"\baten::[\w.]+"), "aten::*"),
    (re.compile(r"(?<![\w.])[-+]?\d+(\.\d+)?([eE][-+]?\d+)?(?!\w)"), "N"),
    (re.compile(r"N(\s*,\s*N)+,?"), "N..."),  # shapes and lists of any rank
    (re.compile(r"\s+"), " "),
)
MAX_CLASS_CHARS = 160


def first_line(message: str) -> str:
    for line in message.splitlines():
        if line.strip():
            return line.strip()
    return "(no message)"


def failure_class(message: str) -> str:
    """The failure's first line with what varies between instances of one
    problem (numbers, shapes, quoted names) replaced, so that e.g. every
    "Could not run 'aten::x' with arguments from the 'neuron' backend"
    lands in one class."""
    text = first_line(message)
    for pattern, replacement in NORMALIZERS:
        text = pattern.sub(replacement, text)
    return text[:MAX_CLASS_CHARS]


# --- the expected-failure list -------------------------------------------------


def load_xfail(path: Path) -> dict[str, dict]:
    if not path.exists():
        return {}
    return {entry["id"]: entry for entry in json.loads(path.read_text())}


def write_xfail(path: Path, previous: dict[str, dict], runs: list[FileRun]) -> int:
    """Replaces the entries of the files that ran by their current failures,
    keeping a reason already written for a test that still fails."""
    ran = {run.name for run in runs}
    entries = {test_id: entry for test_id, entry in previous.items()
               if test_id.split("::")[0] not in ran}
    for run in runs:
        for result in run.results:
            if result.outcome == FAILED:
                old = previous.get(result.id, {})
                entries[result.id] = {"id": result.id, "reason": old.get("reason", "TODO"),
                                      "class": failure_class(result.message)}
    path.write_text(json.dumps(sorted(entries.values(), key=lambda e: e["id"]), indent=1) + "\n")
    return len(entries)


@dataclasses.dataclass
class Verdict:
    expected: list[CaseResult] = dataclasses.field(default_factory=list)
    unexpected: list[CaseResult] = dataclasses.field(default_factory=list)
    stale: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (id, why)


def judge(runs: list[FileRun], xfail: dict[str, dict]) -> Verdict:
    verdict = Verdict()
    seen = {}
    for run in runs:
        for result in run.results:
            seen[result.id] = result.outcome
            if result.outcome == FAILED:
                (verdict.expected if result.id in xfail else verdict.unexpected).append(result)
            elif result.outcome in (PASSED, CPU_TOO) and result.id in xfail:
                verdict.stale.append((result.id, "passes" if result.outcome == PASSED
                                      else "fails on the CPU too"))
    # A listed test that no longer exists is stale too, but only a file that
    # ran to its end can tell.
    finished = {run.name for run in runs if not run.problem}
    for test_id in xfail:
        if test_id.split("::")[0] in finished and test_id not in seen:
            verdict.stale.append((test_id, "no such test"))
    return verdict


# --- the report -----------------------------------------------------------------


def counts(results: list[CaseResult]) -> Counter:
    return Counter(result.outcome for result in results)


def summary_line(tally: Counter) -> str:
    cpu_too = f", {tally[CPU_TOO]} fail on the CPU too" if tally[CPU_TOO] else ""
    return f"{tally[PASSED]} passed, {tally[FAILED]} failed{cpu_too}, {tally[SKIPPED]} skipped"


def pass_rate(tally: Counter) -> str:
    ran = tally[PASSED] + tally[FAILED]
    return f"{100.0 * tally[PASSED] / ran:.1f}%" if ran else "-"


def print_files(runs: list[FileRun]) -> None:
    width = max(len(run.name) for run in runs)
    for run in runs:
        tally = counts(run.results)
        note = f"  [{run.problem}]" if run.problem else ""
        print(f"{run.name:<{width}}  {summary_line(tally)}  pass rate {pass_rate(tally)}"
              f"  {run.seconds:.0f} s{note}")


def print_classes(failures: list[CaseResult], title: str) -> None:
    if not failures:
        return
    groups: dict[str, list[CaseResult]] = {}
    for result in failures:
        groups.setdefault(failure_class(result.message), []).append(result)
    print(f"\n{title} by class ({len(groups)} classes):")
    print(f"{'count':>6}  class  (example)")
    for name, members in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        print(f"{len(members):>6}  {name}\n        e.g. {members[0].id}")


def print_report(runs: list[FileRun], verdict: Verdict, log_dir: Path) -> None:
    print()
    print_files(runs)
    print_classes(verdict.unexpected, "Unexpected failures")
    print_classes([result for run in runs for result in run.results if result.outcome == CPU_TOO],
                  "Failures the CPU has too (not counted)")
    if verdict.expected:
        print(f"\n{len(verdict.expected)} failures are expected (listed in the xfail file).")
    for test_id, why in verdict.stale:
        print(f"STALE xfail entry ({why}): {test_id}")
    for run in runs:
        if run.problem:
            print(f"INCOMPLETE {run.name}: {run.problem} (log: {run.log})")
    print(f"\nlogs: {log_dir}")
    total = counts([result for run in runs for result in run.results])
    print(f"pass rate of the tests that ran: {pass_rate(total)}")
    print(summary_line(total))


def write_json(path: Path, runs: list[FileRun]) -> None:
    path.write_text(json.dumps([{
        "file": run.name, "seconds": round(run.seconds, 1), "problem": run.problem,
        "results": [dataclasses.asdict(result) for result in run.results],
    } for run in runs], indent=1))


# --- main -------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pytorch-src", required=True, type=Path,
                        help="a PyTorch source checkout (its test/ directory is used)")
    parser.add_argument("--only", action="append", metavar="FILE",
                        help="run only this test file (repeatable), e.g. test_ops.py")
    parser.add_argument("--timeout", type=float, default=1800, metavar="S",
                        help="time limit per file in seconds (default 1800)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="files run at once (default 1)")
    parser.add_argument("--write-xfail", action="store_true",
                        help="rewrite the expected-failure list from the current failures")
    parser.add_argument("--xfail-file", type=Path, default=XFAIL_PATH, metavar="PATH",
                        help="the expected-failure list (default tests/upstream_xfail.json)")
    parser.add_argument("--log-dir", type=Path, help="where pytest logs and reports go")
    parser.add_argument("--sim-preset", default="trn2.3xlarge", metavar="NAME",
                        help="the simulated device the run's daemon has (default trn2.3xlarge, "
                             "24 GiB of HBM per core, as the smallest Trainium2 instance; "
                             "PyTorch's large-tensor tests need more than the dev preset's)")
    parser.add_argument("--no-cpu-rerun", action="store_true",
                        help="do not rerun failures on the CPU (see CPU_TOO)")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="write every test's outcome and message here")
    return parser.parse_args(argv)


def selected_files(args: argparse.Namespace, test_dir: Path) -> list[str]:
    files = [Path(name).name for name in args.only] if args.only else list(DEFAULT_FILES)
    missing = [name for name in files if not (test_dir / name).exists()]
    if missing:
        sys.exit(f"not in {test_dir}: {', '.join(missing)}")
    return files


def run_files(files: list[str], args: argparse.Namespace, test_dir: Path, log_dir: Path,
              socket_path: Path) -> list[FileRun]:
    def one(name: str) -> FileRun:
        print(f"running {name} ...", flush=True)
        run = run_file(name, test_dir, log_dir, socket_path, args.timeout)
        if not args.no_cpu_rerun:
            rerun_failures_on_cpu(run, test_dir, log_dir, args.timeout)
        note = f" [{run.problem}]" if run.problem else ""
        print(f"{name}: {summary_line(counts(run.results))} in {run.seconds:.0f} s{note}",
              flush=True)
        return run

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        return list(pool.map(one, files))


def main(argv: list[str]) -> int:
    if argv[:1] == [CHILD_FLAG]:  # a pytest process of a run: see pytest_argv
        return pytest_child(Path(argv[1]), argv[3:])
    args = parse_args(argv)
    test_dir = (args.pytorch_src / "test").resolve()
    if not test_dir.is_dir():
        sys.exit(f"{args.pytorch_src} has no test/ directory: pass a PyTorch source checkout")
    files = selected_files(args, test_dir)
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="neuron-upstream-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    (log_dir / "pytest.ini").write_text("[pytest]\n")

    # The daemon's socket lives in a short private directory: socket paths
    # are limited to about 100 bytes and a --log-dir may be deep.
    with tempfile.TemporaryDirectory(prefix="neuron-upstream-") as socket_dir:
        daemon = start_daemon(Path(socket_dir), log_dir / "neuron-rtd.log", args.sim_preset)
        try:
            runs = run_files(files, args, test_dir, log_dir, Path(socket_dir) / "neuron-rtd.sock")
        finally:
            daemon_exit = stop_daemon(daemon)
    if daemon_exit is not None:
        print(f"neuron-rtd exited during the run (status {daemon_exit}); "
              f"see {log_dir / 'neuron-rtd.log'}")

    xfail = load_xfail(args.xfail_file)
    verdict = judge(runs, xfail)
    print_report(runs, verdict, log_dir)
    if args.json:
        write_json(args.json, runs)
    if args.write_xfail:
        print(f"wrote {write_xfail(args.xfail_file, xfail, runs)} entries to {args.xfail_file}")
        return 1 if daemon_exit is not None or any(run.problem for run in runs) else 0
    failed = (verdict.unexpected or verdict.stale or daemon_exit is not None
              or any(run.problem for run in runs))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

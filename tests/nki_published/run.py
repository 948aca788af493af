"""Runs NKI kernels published by AWS against goldens, on this project's nki.

The kernels and AWS's tests stay outside the repository: pass checkouts
(work trees) of the repositories they come from. This folder holds only the
runner and our drivers (cases_legacy.py, cases_current.py: inputs and
float64 goldens written from what each kernel computes).

    .venv/bin/python tests/nki_published/run.py \\
        --neuron-sdk-legacy DIR       # aws-neuron-sdk at 0521004c (Neuron 2.26: general/nki/)
        --neuron-sdk DIR              # aws-neuron-sdk at HEAD (nki/)
        --nki-samples DIR             # nki-samples at HEAD (src/nki_samples/tutorials)
        --nki-samples-reference DIR   # nki-samples at c4b806e^ (src/nki_samples/reference)
        --nki-library DIR             # nki-library at HEAD (src/nkilib_src/nkilib)
        [--mode simulate|device|both] [--only TEXT ...] [--list] [--timeout S]
        [--jobs N] [--aws-api-tests]

A checkout is any work tree of that commit (`git worktree add DIR COMMIT`,
or `git archive COMMIT | tar -x -C DIR`). Some published modules import
scipy (legacy sd_attention); without it they end as `third-party module
missing: scipy`.

Cases whose checkout is not given are skipped. `simulate` runs each kernel
in-process (nki.simulate, or neuronxcc.nki.simulate_kernel for the legacy
namespace); `device` calls it on neuron tensors (the daemon starts itself).
Each case runs in its own process with a timeout and ends PASS, FAIL (wrong
numbers: the worst output's max error) or ERROR (exception type, its first
line, and the published file:line it came from). The table ends with the
failure causes, most frequent first, and `N/M published kernels pass`.
--only runs the cases (or API test files) whose name contains a TEXT given.

--aws-api-tests instead runs AWS's API example tests (general/nki/test at
the legacy commit, nki/test at HEAD) with pytest from the checkouts, each
file in its own process, and summarizes them per file and by error.

The exit status is 1 when any case (or API test) does not pass.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

import api_tests
import cases_current  # noqa: F401  (registers its cases)
import cases_legacy  # noqa: F401  (registers its cases)
from harness import CASES, SOURCES, run_case


def main():
    options = parse_options()
    checkouts = {s: os.path.abspath(getattr(options, s.replace("-", "_")))
                 for s in SOURCES if getattr(options, s.replace("-", "_"))}
    if options.worker:
        return work(options.worker, checkouts, options.mode, options.result)
    if options.aws_api_tests:
        passed, total = api_tests.run_all(checkouts, options.timeout, options.only)
        return 0 if passed == total else 1
    selected = [c for c in CASES.values()
                if not options.only or any(text in c.name for text in options.only)]
    if options.list:
        for c in selected:
            print(f"{c.name:<46} {c.namespace:<8} {c.source:<22} {c.module} (in {c.path})")
        return 0
    modes = ["simulate", "device"] if options.mode == "both" else [options.mode]
    with concurrent.futures.ThreadPoolExecutor(options.jobs) as pool:
        results = list(pool.map(lambda job: run_isolated(*job, checkouts, options.timeout),
                                [(c, mode) for mode in modes for c in selected]))
    report(results)
    return 0 if all(r["status"] in ("PASS", "SKIP") for r in results) else 1


def parse_options():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for source in SOURCES:
        parser.add_argument(f"--{source}", metavar="DIR", help="a checkout (see the module doc)")
    parser.add_argument("--mode", choices=["simulate", "device", "both"], default="simulate")
    parser.add_argument("--only", nargs="+", metavar="TEXT")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--timeout", type=float, default=300,
                        help="seconds for one case or one API test file (default 300)")
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once (default 1)")
    parser.add_argument("--aws-api-tests", action="store_true")
    parser.add_argument("--worker", help=argparse.SUPPRESS)   # runs one case (internal)
    parser.add_argument("--result", help=argparse.SUPPRESS)   # where the worker writes it
    return parser.parse_args()


def run_isolated(case, mode, checkouts, timeout):
    """Runs one case in a fresh interpreter: published modules set
    environment variables and share module names, and a kernel may crash or
    hang the interpreter."""
    row = {"case": case.name, "mode": mode, "namespace": case.namespace, "source": case.source}
    if case.source not in checkouts:
        return dict(row, status="SKIP", detail=f"no --{case.source} checkout")
    print(f"  {mode:<8} {case.name} ...", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        result_path = os.path.join(scratch, "result.json")
        command = [sys.executable, os.path.abspath(__file__), "--worker", case.name,
                   "--mode", mode, "--result", result_path,
                   f"--{case.source}", checkouts[case.source]]
        try:
            completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return dict(row, status="ERROR", cause="timeout", detail=f"timed out after {timeout} s")
        if not os.path.exists(result_path):
            tail = completed.stderr.strip().splitlines()
            cause = f"worker died (exit {completed.returncode})"
            return dict(row, status="ERROR", cause=cause,
                        detail=f"{cause}: {tail[-1] if tail else ''}")
        with open(result_path) as handle:
            return dict(row, **json.load(handle))


def work(name, checkouts, mode, result_path):
    case = CASES[name]
    result = run_case(case, checkouts[case.source], mode)
    with open(result_path, "w") as handle:
        json.dump(result, handle)
    return 0


def report(results):
    print(f"\n{'case':<44} {'mode':<8} {'namespace':<9} {'source':<21} {'result':<6} detail")
    for r in results:
        detail = r.get("detail", "")
        if r["status"] != "SKIP" and "seconds" in r:
            detail = f"{detail} ({r['seconds']} s)"
        print(f"{r['case']:<44} {r['mode']:<8} {r['namespace']:<9} {r['source']:<21} "
              f"{r['status']:<6} {detail}")

    causes = collections.defaultdict(list)
    for r in results:
        if r["status"] == "ERROR":
            causes[r["cause"]].append(r["case"])
        elif r["status"] == "FAIL":
            causes["wrong numbers (FAIL)"].append(r["case"])
    if causes:
        print("\nFailure causes, most frequent first:")
        for cause, names in sorted(causes.items(), key=lambda item: -len(item[1])):
            print(f"{len(names):>4}  {cause}\n      {', '.join(names)}")

    for mode in dict.fromkeys(r["mode"] for r in results):
        ran = [r for r in results if r["mode"] == mode and r["status"] != "SKIP"]
        skipped = sum(1 for r in results if r["mode"] == mode and r["status"] == "SKIP")
        passed = sum(1 for r in ran if r["status"] == "PASS")
        note = f" ({skipped} skipped: no checkout)" if skipped else ""
        print(f"\n{mode}: {passed}/{len(ran)} published kernels pass{note}")


if __name__ == "__main__":
    sys.exit(main())

"""The runner of PyTorch's device-generic suites (tests/upstream/run.py):
how it reads pytest's outcomes, groups failures into classes and judges a
run against the expected-failure list. The suites themselves need a PyTorch
checkout and run outside CI (deploy/dev.sh upstream-tests)."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

RUNNER = Path(__file__).resolve().parents[1] / "upstream" / "run.py"
spec = importlib.util.spec_from_file_location("upstream_run", RUNNER)
run = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = run  # its dataclasses look their module up
spec.loader.exec_module(run)


def test_failure_classes_ignore_what_varies_between_instances():
    one = run.failure_class("NotImplementedError: Could not run 'aten::foo' with arguments "
                            "from the 'neuron' backend.\nmore")
    other = run.failure_class("NotImplementedError: Could not run 'aten::bar.out' with "
                              "arguments from the 'CPU' backend.")
    assert one == other
    assert run.failure_class("shape [3, 4] at 0x7ffd, 1e-05") == "shape [N...] at N..."
    assert run.failure_class("loading at unix:/tmp/a/b.sock failed") == "loading at PATH failed"
    assert run.failure_class("") == "(no message)"


def test_outcomes_take_the_worst_phase_and_name_the_test_a_crash_was_in(tmp_path):
    records = [
        {"start": "f.py::A::test_ok"}, {"id": "f.py::A::test_ok", "outcome": "passed",
                                        "message": ""}, {"end": "f.py::A::test_ok"},
        {"start": "f.py::A::test_teardown"},
        {"id": "f.py::A::test_teardown", "outcome": "passed", "message": ""},
        {"id": "f.py::A::test_teardown", "outcome": "failed", "message": "teardown broke"},
        {"end": "f.py::A::test_teardown"},
        {"start": "f.py::A::test_crash"},
    ]
    path = tmp_path / "f.outcomes.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + '\n{"id": "trunc')
    results, running = run.read_outcomes(path)
    assert {r.id: r.outcome for r in results} == {"f.py::A::test_ok": "passed",
                                                  "f.py::A::test_teardown": "failed"}
    assert running == "f.py::A::test_crash"


def test_the_expected_failure_list_goes_stale_loudly():
    results = [run.CaseResult("a.py::T::test_new_failure", "failed", "boom"),
               run.CaseResult("a.py::T::test_known", "failed", "known"),
               run.CaseResult("a.py::T::test_fixed", "passed")]
    xfail = {test_id: {"id": test_id, "reason": "r", "class": "c"} for test_id in
             ("a.py::T::test_known", "a.py::T::test_fixed", "a.py::T::test_removed",
              "b.py::T::test_not_run")}
    verdict = run.judge([run.FileRun("a.py", results, 1.0)], xfail)
    assert [r.id for r in verdict.unexpected] == ["a.py::T::test_new_failure"]
    assert [r.id for r in verdict.expected] == ["a.py::T::test_known"]
    assert sorted(verdict.stale) == [("a.py::T::test_fixed", "passes"),
                                     ("a.py::T::test_removed", "no such test")]
    # A file that did not finish cannot tell which tests no longer exist.
    verdict = run.judge([run.FileRun("a.py", results, 1.0, problem="timed out")], xfail)
    assert verdict.stale == [("a.py::T::test_fixed", "passes")]


def test_rewriting_the_list_keeps_reasons_and_other_files(tmp_path):
    path = tmp_path / "xfail.json"
    previous = {"a.py::T::test_still": {"id": "a.py::T::test_still", "reason": "why",
                                        "class": "old"},
                "a.py::T::test_fixed": {"id": "a.py::T::test_fixed", "reason": "gone",
                                        "class": "old"},
                "b.py::T::test_other": {"id": "b.py::T::test_other", "reason": "kept",
                                        "class": "c"}}
    results = [run.CaseResult("a.py::T::test_still", "failed", "Error: 3 != 4"),
               run.CaseResult("a.py::T::test_fresh", "failed", "Error: x"),
               run.CaseResult("a.py::T::test_fixed", "passed")]
    assert run.write_xfail(path, previous, [run.FileRun("a.py", results, 1.0)]) == 3
    entries = {e["id"]: e for e in json.loads(path.read_text())}
    assert entries["a.py::T::test_still"] == {"id": "a.py::T::test_still", "reason": "why",
                                              "class": "Error: N != N"}
    assert entries["a.py::T::test_fresh"]["reason"] == "TODO"
    assert entries["b.py::T::test_other"]["reason"] == "kept"
    assert "a.py::T::test_fixed" not in entries


def test_a_neuron_test_id_names_its_cpu_instance():
    assert (run.cpu_test_id("test_a.py::TestAPRIVATEUSE1::test_x_neuron_float32")
            == "test_a.py::TestACPU::test_x_cpu_float32")
    assert run.cpu_test_id("test_a.py::NumpyTestsNEURON::test_y_neuron") == \
        "test_a.py::NumpyTestsCPU::test_y_cpu"


def test_a_checkout_without_tests_is_refused_with_a_clear_error(tmp_path):
    done = subprocess.run([sys.executable, str(RUNNER), "--pytorch-src", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "has no test/ directory" in done.stderr
    (tmp_path / "test").mkdir()
    done = subprocess.run([sys.executable, str(RUNNER), "--pytorch-src", str(tmp_path),
                           "--only", "test_ops.py"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "not in" in done.stderr and "test_ops.py" in done.stderr


def test_a_run_of_a_small_device_generic_file(tmp_path):
    # A stand-in for a PyTorch checkout: one device-generic test file
    # instantiated for neuron through PyTorch's own harness.
    test_dir = tmp_path / "test"
    test_dir.mkdir()
    (test_dir / "test_tiny.py").write_text(textwrap.dedent("""
        import torch
        from torch.testing._internal.common_device_type import instantiate_device_type_tests
        from torch.testing._internal.common_utils import TestCase, run_tests

        class TestTiny(TestCase):
            def test_add(self, device):
                self.assertEqual(torch.ones(2, device=device) + 1, torch.full((2,), 2.0))

            def test_broken(self, device):
                if torch.device(device).type != "cpu":
                    raise RuntimeError("broken on " + str(torch.device(device).type))

            def test_suite_bug(self, device):
                raise AttributeError("the suite is newer than this torch")

        instantiate_device_type_tests(TestTiny, globals())

        if __name__ == "__main__":
            run_tests()
    """))
    xfail = tmp_path / "xfail.json"
    report = tmp_path / "report.json"
    args = [sys.executable, str(RUNNER), "--pytorch-src", str(tmp_path), "--only", "test_tiny.py",
            "--xfail-file", str(xfail), "--log-dir", str(tmp_path / "logs"), "--json", str(report)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=""))
    assert done.returncode == 1, done.stdout + done.stderr
    # A failure the CPU has too is the suite's: counted apart, not in the
    # pass rate, and needs no entry in the list.
    assert "1 passed, 1 failed, 1 fail on the CPU too, 0 skipped" in done.stdout
    assert "pass rate of the tests that ran: 50.0%" in done.stdout
    assert "RuntimeError: broken on neuron" in done.stdout
    outcomes = {r["id"].split("::")[-1]: r["outcome"] for r in json.loads(report.read_text())[0]["results"]}
    assert outcomes == {"test_add_neuron": "passed", "test_broken_neuron": "failed",
                        "test_suite_bug_neuron": "fails on the CPU too"}
    xfail.write_text(json.dumps([{"id": "test_tiny.py::TestTinyPRIVATEUSE1::test_broken_neuron",
                                  "reason": "a test of the runner", "class": "RuntimeError"}]))
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 failures are expected" in done.stdout

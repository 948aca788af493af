"""The embedded default: with no daemon, the first use of the device starts
one per user, once even when processes race; NEURON_RTD_AUTOSTART=0 turns it
off with an error that says what to do."""

import os
import signal
import subprocess
import sys
import time

FIRST_USE = (
    "import torch\n"
    "x = torch.ones(3, device='neuron') * 2\n"
    "print(x.sum().item(), torch.neuron.device_count())\n"
)


def _env(socket_path, **extra):
    return {**os.environ, "NEURON_RTD_ADDRESS": f"unix:{socket_path}",
            "NEURON_RTD_AUTOSTART": "1", "NEURON_RTD_IDLE_EXIT": "2", **extra}


def _daemon_pids(socket_path):
    out = subprocess.run(["pgrep", "-f", f"^[^ ]*neuron-rtd --socket {socket_path}"],
                         capture_output=True, text=True).stdout
    return [int(pid) for pid in out.split()]


def _wait_until_no_daemon(socket_path, timeout_s=120):
    deadline = time.monotonic() + timeout_s
    while _daemon_pids(socket_path):
        assert time.monotonic() < deadline, f"a neuron-rtd on {socket_path} did not exit"
        time.sleep(0.05)


def test_autostart_is_off_with_a_clear_error(tmp_path):
    result = subprocess.run([sys.executable, "-c", FIRST_USE], capture_output=True, text=True,
                            env=_env(tmp_path / "none.sock", NEURON_RTD_AUTOSTART="0"))
    assert result.returncode != 0
    assert "no neuron-rtd answers at unix:" in result.stderr
    assert "neuron-rtd --socket" in result.stderr and "NEURON_RTD_AUTOSTART" in result.stderr


def test_racing_processes_start_exactly_one_daemon(tmp_path):
    socket_path = tmp_path / "rtd.sock"
    runs = [subprocess.Popen([sys.executable, "-c", FIRST_USE], env=_env(socket_path),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(4)]
    outputs = [run.communicate(timeout=300) for run in runs]
    try:
        for run, (out, err) in zip(runs, outputs):
            assert run.returncode == 0, err
            assert out.split()[0] == "6.0"
        announced = sum("started a per-user one" in err for _, err in outputs)
        assert announced >= 1
        # Every daemon a racing process started has exited by now or exits
        # soon: the losers at once, the winner once idle. Exactly one served.
        _wait_until_no_daemon(socket_path)
        log = (tmp_path / "rtd.sock.log").read_text()
        assert log.count("neuron-rtd serving ") == 1, log
    finally:
        for pid in _daemon_pids(socket_path):
            os.kill(pid, signal.SIGTERM)

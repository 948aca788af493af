"""How fast neuron-rtd starts, stops and answers neuronctl.

Start-up is timed from spawn to the daemon's sd_notify READY=1 (the moment
it serves), for the small default preset (the baseline) and for
trn2.48xlarge (16 chips, 1.5 TiB of reserved HBM) in the same run: their
ratio shows what a large topology costs at start. `neuron-rtd --version`
(exec, loading libtorch, exit) is reported beside them for scale.
"""
import os
import pathlib
import signal
import socket
import statistics
import subprocess
import tempfile
import time

RUNS = 7


def _median_ms(samples):
    return round(statistics.median(samples) * 1000.0, 3)


def _start_until_ready(binary, preset, workdir):
    notify_path = os.path.join(workdir, "notify.sock")
    sock_path = os.path.join(workdir, "rtd.sock")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(30)
    env = dict(os.environ, NOTIFY_SOCKET=notify_path)
    started = time.perf_counter()
    process = subprocess.Popen(
        [binary, "--socket", sock_path, "--sim-preset", preset, "--log-level", "warn"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while b"READY=1" not in notify.recv(4096):
            pass
        ready = time.perf_counter() - started
    finally:
        notify.close()
        os.unlink(notify_path)
    return process, sock_path, ready


def run(build_dir: pathlib.Path) -> dict:
    binary = str(build_dir / "bin" / "neuron-rtd")
    neuronctl = str(build_dir / "bin" / "neuronctl")

    version = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run([binary, "--version"], check=True, stdout=subprocess.DEVNULL)
        version.append(time.perf_counter() - started)

    figures = {"daemon_version_exec_ms": _median_ms(version)}
    for preset, key in (("dev", "dev"), ("trn2.48xlarge", "48xl")):
        ready, stop, ls = [], [], []
        for _ in range(RUNS):
            with tempfile.TemporaryDirectory(prefix="nrtd-bench-") as workdir:
                process, sock_path, ready_s = _start_until_ready(binary, preset, workdir)
                ready.append(ready_s)
                started = time.perf_counter()
                subprocess.run([neuronctl, "--address", f"unix:{sock_path}", "ls", "--json"],
                               check=True, stdout=subprocess.DEVNULL)
                ls.append(time.perf_counter() - started)
                started = time.perf_counter()
                process.send_signal(signal.SIGTERM)
                if process.wait(timeout=30) != 0:
                    raise RuntimeError(f"neuron-rtd ({preset}) did not exit cleanly")
                stop.append(time.perf_counter() - started)
        figures[f"daemon_ready_{key}_ms"] = _median_ms(ready)
        figures[f"daemon_stop_{key}_ms"] = _median_ms(stop)
        figures[f"neuronctl_ls_{key}_ms"] = _median_ms(ls)
    figures["daemon_ready_48xl_vs_dev"] = round(
        figures["daemon_ready_48xl_ms"] / figures["daemon_ready_dev_ms"], 3)
    return figures

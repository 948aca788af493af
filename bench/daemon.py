"""Starting a neuron-rtd for a benchmark: on a private socket, ready when it
says so (sd_notify READY=1 on NOTIFY_SOCKET), stopped with SIGTERM."""
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time


def start(binary, preset="dev", extra_args=(), env=None, config="/dev/null"):
    """Starts a daemon (`env`: variables added to this process's; `config`:
    its configuration file); returns (process, socket path, workdir, seconds
    to ready)."""
    workdir = tempfile.mkdtemp(prefix="nrtd-bench-")
    notify_path = os.path.join(workdir, "notify.sock")
    sock_path = os.path.join(workdir, "rtd.sock")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(30)
    env = dict(os.environ, **(env or {}), NOTIFY_SOCKET=notify_path)
    started = time.perf_counter()
    process = subprocess.Popen(
        [binary, "--config", config, "--socket", sock_path, "--sim-preset", preset,
         "--log-level", "warn", *extra_args],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while b"READY=1" not in notify.recv(4096):
            pass
        ready = time.perf_counter() - started
    finally:
        notify.close()
        os.unlink(notify_path)
    return process, sock_path, workdir, ready


def stop(process, workdir):
    """SIGTERM; returns seconds until it exited. Raises if it did not exit 0."""
    started = time.perf_counter()
    process.send_signal(signal.SIGTERM)
    code = process.wait(timeout=30)
    elapsed = time.perf_counter() - started
    with contextlib.suppress(OSError):
        for name in os.listdir(workdir):
            os.unlink(os.path.join(workdir, name))
        os.rmdir(workdir)
    if code != 0:
        raise RuntimeError(f"neuron-rtd exited with {code}")
    return elapsed


def run_worker(build_dir, script, timeout=1200, worker_args=(), daemon_args=(), daemon_env=None):
    """Runs `script --worker [worker_args]` against a daemon started here
    (with `daemon_args` and `daemon_env`), torch_neuronx pointed at it;
    returns the JSON object the worker printed last."""
    process, sock_path, workdir, _ = start(str(build_dir / "bin" / "neuron-rtd"),
                                           extra_args=daemon_args, env=daemon_env)
    try:
        result = subprocess.run(
            [sys.executable, script, "--worker", *worker_args], check=True, capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "NEURON_RTD_ADDRESS": f"unix:{sock_path}",
                 "NEURON_RTD_AUTOSTART": "0"})
    finally:
        stop(process, workdir)
    return json.loads(result.stdout.strip().splitlines()[-1])

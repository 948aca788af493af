"""For every Python suite (tests/python, tests/models): each pytest session
starts its own neuron-rtd on a temporary socket and points torch_neuronx at
it (NEURON_RTD_ADDRESS) before any test touches the device. Readiness comes
from the daemon's sd_notify message, not polling."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest

def daemon_binary():
    import torch_neuronx

    return torch_neuronx._daemon_binary()


def start_daemon(socket_path, extra_args=(), config_text=""):
    """Starts neuron-rtd and returns (process, log path) once it serves."""
    directory = os.path.dirname(socket_path)
    config = os.path.join(directory, "neuron-rtd.toml")
    with open(config, "w") as handle:
        handle.write(config_text)
    notify_path = os.path.join(directory, "notify.sock")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(60)
    log_path = socket_path + ".log"
    env = dict(os.environ, NOTIFY_SOCKET=notify_path)
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [daemon_binary(), "--config", config, "--socket", socket_path, *extra_args],
            stdout=log, stderr=subprocess.STDOUT, env=env,
        )
    try:
        while b"READY=1" not in notify.recv(4096):
            pass
    finally:
        notify.close()
    return process, log_path


def device_config(directory):
    """The session daemon's [device] section: the sim by default; with
    NEURON_TEST_DEVICE_BACKEND=nrt, the nrt backend over the fake libnrt at
    NEURON_TEST_FAKE_NRT (tests/fake_nrt, four cores of 1 GiB, locked in a
    directory of this session's)."""
    if os.environ.get("NEURON_TEST_DEVICE_BACKEND", "sim") != "nrt":
        return ""
    library = os.environ["NEURON_TEST_FAKE_NRT"]
    os.environ.update({"FAKE_NRT_DIR": os.path.join(directory, "fake-nrt"),
                       "FAKE_NRT_CORES": "4", "FAKE_NRT_HBM_BYTES": str(1 << 30)})
    return f'[device]\nbackend = "nrt"\nnrt_library = "{library}"\n'


def pytest_configure(config):
    """Starts the session's daemon before collection: test modules that
    query the device when imported (PyTorch's test harness counts devices
    at import) must reach it, not start a daemon of their own."""
    directory = tempfile.mkdtemp(prefix="neuron-pytest-")
    socket_path = os.path.join(directory, "neuron-rtd.sock")
    # A per-session HBM quota makes out-of-memory reachable in a test;
    # graphs stay interpreted (test_compile_tiers.py starts its own daemon
    # with the compiler on).
    process, _ = start_daemon(
        socket_path,
        config_text=device_config(directory) + "[session]\nmax_hbm_bytes = 2147483648\n"
                    "[compiler]\ncompile_after_launches = 0\n")
    os.environ["NEURON_RTD_ADDRESS"] = "unix:" + socket_path
    os.environ["NEURON_RTD_AUTOSTART"] = "0"
    # PyTorch's compile caches (AOTAutograd's keeps torch.compile's graphs)
    # of this session alone: nothing from an earlier run is reused.
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(directory, "torch-compile-cache")
    config.neuron_daemon = (process, socket_path, directory)


def pytest_unconfigure(config):
    started = getattr(config, "neuron_daemon", None)
    if started is None:
        return
    process, _, directory = started
    process.terminate()
    process.wait(timeout=30)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def neuron_daemon(pytestconfig):
    """The socket of the daemon every test's torch_neuronx uses."""
    return pytestconfig.neuron_daemon[1]


@pytest.fixture
def daemon_device_config():
    """device_config, for tests that start daemons of their own."""
    return device_config


@pytest.fixture
def own_daemon():
    """Starts daemons of the test's own (start(socket_path, extra_args,
    config_text) -> (process, log path)); stops them after the test."""
    started = []

    def start(socket_path, extra_args=(), config_text=""):
        process, log_path = start_daemon(socket_path, extra_args, config_text)
        started.append(process)
        return process, log_path

    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=60)


@pytest.fixture
def run_python(tmp_path):
    """Runs a Python snippet in a fresh interpreter (its own session)."""

    def run(code, env=None, timeout=300):
        script = tmp_path / "snippet.py"
        script.write_text(code)
        return subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=timeout,
            env=dict(os.environ, **(env or {})),
        )

    return run

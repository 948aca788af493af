"""What the daemon sees of a PyTorch process, and what the process sees when
the daemon goes away."""

import json
import os
import signal
import subprocess
import sys

import torch
import torch_neuronx


def neuronctl(*args):
    binary = os.path.join(os.path.dirname(torch_neuronx._C.__file__), "bin", "neuronctl")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60)


def test_neuronctl_ps_shows_this_process_and_its_commands():
    (torch.ones(8, device="neuron") + 1).sum().item()
    info = torch_neuronx._C._session_info()
    result = neuronctl("--address", info["address"], "ps", "--json")
    assert result.returncode == 0, result.stderr
    sessions = {s["session_id"]: s for s in json.loads(result.stdout)["sessions"]}
    mine = sessions[info["session_id"]]
    assert mine["pid"] == os.getpid()
    assert f"torch_neuronx pid {os.getpid()}" in mine["client_name"]
    assert mine["commands_completed"] > 0


def test_neuronctl_share_sets_this_sessions_weight_and_ps_shows_its_device_time():
    (torch.ones(64, 64, device="neuron") @ torch.ones(64, 64, device="neuron")).sum().item()
    info = torch_neuronx._C._session_info()
    address = info["address"]
    result = neuronctl("--address", address, "share", str(info["session_id"]), "3")
    assert result.returncode == 0, result.stderr
    assert f"session {info['session_id']}: weight 3" in result.stdout
    mine = {s["session_id"]: s for s in json.loads(
        neuronctl("--address", address, "ps", "--json").stdout)["sessions"]}[info["session_id"]]
    assert mine["share_weight"] == 3
    assert mine["device_time_ns"] > 0
    assert 0 < mine["recent_core_share"] <= 1
    assert mine["queued_commands"] == 0  # everything it submitted has run
    table = neuronctl("--address", address, "ps").stdout
    assert "WEIGHT" in table and "CORE SHARE" in table

    for bad in ("0", "1001"):
        refused = neuronctl("--address", address, "share", str(info["session_id"]), bad)
        assert refused.returncode == 2 and "WEIGHT" in refused.stderr, refused.stderr
    missing = neuronctl("--address", address, "share", "987654321", "2")
    assert missing.returncode == 1 and "987654321" in missing.stderr, missing.stderr
    neuronctl("--address", address, "share", str(info["session_id"]), "1")


def test_a_daemon_that_dies_gives_an_error_not_a_hang(tmp_path):
    socket_path = tmp_path / "rtd.sock"
    script = (
        "import os, signal, subprocess, torch\n"
        "x = torch.ones(4, device='neuron')\n"
        "print(x.sum().item(), flush=True)\n"
        "pid = int(subprocess.run(['pgrep', '-f', '^[^ ]*neuron-rtd --socket " + str(socket_path) + "'],"
        " capture_output=True, text=True).stdout.split()[0])\n"
        "os.kill(pid, signal.SIGKILL)\n"
        "try:\n"
        "    (x * 2).sum().item()\n"
        "except RuntimeError as error:\n"
        "    print('error:', error)\n"
    )
    env = {**os.environ, "NEURON_RTD_ADDRESS": f"unix:{socket_path}", "NEURON_RTD_AUTOSTART": "1"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "4.0"
    assert lines[1].startswith("error:"), result.stdout
    assert "went away" in lines[1] or "cannot reach neuron-rtd" in lines[1], result.stdout
    assert f"unix:{socket_path}" in lines[1] and "NEURON_RTD_ADDRESS" in lines[1]

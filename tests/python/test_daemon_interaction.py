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

"""A PyTorch process inside a grant (what a Kubernetes pod gets from the
device plugin): it sees the grant's cores as its devices, its memory is held
to the grant's quota with the usual out-of-memory error, and a core outside
the grant is refused at first use."""

import os
import subprocess
import uuid

import pytest
import torch_neuronx


def neuronctl(*args):
    binary = os.path.join(os.path.dirname(torch_neuronx._C.__file__), "bin", "neuronctl")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60)


@pytest.fixture
def grant():
    grant_id = "pytest-" + uuid.uuid4().hex[:8]
    created = neuronctl("grant", "create", grant_id, "--cores", "1",
                        "--hbm-quota", str(64 << 20), "--label", "pytest")
    assert created.returncode == 0, created.stderr
    directory = created.stdout.strip().split(": ", 1)[1]
    yield "unix:" + os.path.join(directory, "neuron-rtd.sock")
    removed = neuronctl("grant", "rm", grant_id)
    assert removed.returncode == 0, removed.stderr


def test_a_process_in_a_grant_sees_its_cores_and_is_held_to_its_quota(grant, run_python):
    result = run_python(
        "import torch, torch_neuronx\n"
        "print(torch.accelerator.device_count(), torch.neuron.device_count())\n"
        "x = torch.arange(6., device='neuron').reshape(2, 3)\n"
        "print((x @ x.T).cpu().tolist())\n"
        "try:\n"
        "    torch.empty(128 << 20, dtype=torch.uint8, device='neuron')\n"
        "except torch.OutOfMemoryError as error:\n"
        "    print('oom', 'grant' in str(error) or 'core 1' in str(error))\n"
        "print((x + 1).sum().item())\n",
        env={"NEURON_RTD_ADDRESS": grant})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "1 1"
    assert lines[1] == "[[5.0, 14.0], [14.0, 50.0]]"
    assert lines[2] == "oom True"
    assert lines[3] == "21.0"


def test_a_core_outside_the_grant_is_refused_at_first_use(grant, run_python):
    result = run_python(
        "import torch, torch_neuronx\n"
        "try:\n"
        "    torch.ones(1, device='neuron')\n"
        "except RuntimeError as error:\n"
        "    print(error)\n",
        env={"NEURON_RTD_ADDRESS": grant, "NEURON_RT_VISIBLE_CORES": "0"})
    assert result.returncode == 0, result.stderr
    assert "core 0 is not granted" in result.stdout

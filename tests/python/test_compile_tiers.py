"""torch.compile's second tier: graphs the daemon's compiler worker turned
into fused code, against the interpreter's results and across processes
(the disk cache). A daemon of its own with the compiler on: the session's
daemon keeps graphs interpreted."""

import os
import shutil
import sys
import tempfile

import pytest

TRAIN = """
import time, torch, torch_neuronx
torch.manual_seed(0)
reference = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
model.load_state_dict(reference.state_dict())
model = model.to("neuron")
compiled = torch.compile(model, backend="neuron")
x = torch.randn(8, 16)

def step(net, data):
    net.zero_grad()
    out = net(data)
    out.square().mean().backward()
    return out

first = step(compiled, x.to("neuron"))
tiers = [graph["tier"] for graph in torch_neuronx.compiled_graphs()]
print("tiers at first call", tiers)
deadline = time.monotonic() + 300
while time.monotonic() < deadline:
    graphs = torch_neuronx.compiled_graphs()
    if all(graph["compile_state"] != "compiling" and graph["compile_state"] != "interpreted"
           for graph in graphs):
        break
    time.sleep(0.1)
print("states", [graph["compile_state"] for graph in graphs])
out = step(compiled, x.to("neuron"))
expected = step(reference, x)
torch.testing.assert_close(out.cpu(), expected, rtol=1e-5, atol=1e-6)
torch.testing.assert_close(model[0].weight.grad.cpu(), reference[0].weight.grad, rtol=1e-5,
                           atol=1e-6)
print("tiers", [graph["tier"] for graph in torch_neuronx.compiled_graphs()])
"""


@pytest.fixture
def compiling_daemon(own_daemon):
    # A short path: a Unix socket's is at most 107 bytes.
    directory = tempfile.mkdtemp(prefix="nrt-tiers-")
    socket_path = os.path.join(directory, "rtd.sock")
    _, log_path = own_daemon(
        socket_path,
        extra_args=("--compile-after-launches", "1", "--compiler-python", sys.executable,
                    "--compiler-cache-dir", os.path.join(directory, "cache")))
    yield socket_path, log_path
    shutil.rmtree(directory, ignore_errors=True)


def test_hot_graphs_run_compiled_and_a_second_process_finds_them_compiled(
        compiling_daemon, run_python):
    socket_path, log_path = compiling_daemon
    env = {"NEURON_RTD_ADDRESS": "unix:" + socket_path}
    first = run_python(TRAIN, env=env, timeout=600)
    assert first.returncode == 0, first.stderr + open(log_path).read()
    assert "tiers at first call [0, 0]" in first.stdout
    assert "states ['compiled', 'compiled']" in first.stdout, open(log_path).read()
    assert "tiers [1, 1]" in first.stdout
    # Another process loads the same graphs: compiled from the first call.
    second = run_python(TRAIN, env=env, timeout=600)
    assert second.returncode == 0, second.stderr
    assert "tiers at first call [1, 1]" in second.stdout


RANDOM = """
import time, torch, torch.nn as nn, torch_neuronx

class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.second = nn.Linear(16, 16), nn.Linear(16, 16)

    def forward(self, x):
        y = nn.functional.dropout(self.first(x), 0.5) + torch.randn_like(x) * 0.1
        return nn.functional.dropout(self.second(y).relu(), 0.3) * torch.rand_like(y)

model = Noisy().to("neuron")
compiled = torch.compile(model, backend="neuron")
x = torch.randn(8, 16).to("neuron")

def run():
    torch.manual_seed(3)
    out = compiled(x)
    out.sum().backward()
    result = (out.detach().cpu(), model.first.weight.grad.cpu().clone())
    model.zero_grad()
    return result

interpreted = run()
tiers = [graph["tier"] for graph in torch_neuronx.compiled_graphs()]
deadline = time.monotonic() + 300
while time.monotonic() < deadline and any(
        graph["compile_state"] in ("compiling", "interpreted")
        for graph in torch_neuronx.compiled_graphs()):
    time.sleep(0.1)
compiled_run = run()
print("tiers", tiers, [graph["tier"] for graph in torch_neuronx.compiled_graphs()])
print("states", [graph["compile_state"] for graph in torch_neuronx.compiled_graphs()])
print("same", torch.equal(interpreted[0], compiled_run[0]),
      torch.equal(interpreted[1], compiled_run[1]))
"""


def test_random_operators_draw_the_same_numbers_on_both_tiers(compiling_daemon, run_python):
    socket_path, log_path = compiling_daemon
    result = run_python(RANDOM, env={"NEURON_RTD_ADDRESS": "unix:" + socket_path}, timeout=600)
    assert result.returncode == 0, result.stderr + open(log_path).read()
    assert "tiers [0, 0] [1, 1]" in result.stdout, result.stdout + open(log_path).read()
    assert "same True True" in result.stdout, result.stdout

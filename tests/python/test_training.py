"""Autograd, optimizers, autocast and whole training steps on neuron."""

import copy
import os
import sys

import torch
import torch.nn as nn
import torch_neuronx

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def test_backward_matches_cpu():
    w = torch.randn(5, 3, requires_grad=True)
    x = torch.randn(4, 5)
    (torch.tanh(x @ w).sum() * 2).backward()
    w_n = w.detach().to("neuron").requires_grad_()
    (torch.tanh(x.to("neuron") @ w_n).sum() * 2).backward()
    assert w_n.grad.device.type == "neuron"
    torch.testing.assert_close(w_n.grad.cpu(), w.grad, rtol=1e-5, atol=1e-5)


def test_three_adamw_steps_match_cpu():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4))
    reference = copy.deepcopy(model)
    model.to("neuron")
    losses = {}
    for name, net, device in (("neuron", model, "neuron"), ("cpu", reference, "cpu")):
        optimizer = torch.optim.AdamW(net.parameters(), lr=1e-2, foreach=True)
        generator = torch.Generator().manual_seed(1)
        losses[name] = []
        for _ in range(3):
            x = torch.randn(8, 16, generator=generator).to(device)
            y = torch.randint(0, 4, (8,), generator=generator).to(device)
            loss = nn.functional.cross_entropy(net(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses[name].append(loss.item())
    torch.testing.assert_close(losses["neuron"], losses["cpu"], rtol=1e-4, atol=1e-5)
    for a, b in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(a.detach().cpu(), b.detach(), rtol=1e-4, atol=1e-5)


def test_autocast_runs_matmuls_in_bfloat16():
    x = torch.randn(4, 8, device="neuron")
    layer = nn.Linear(8, 8).to("neuron")
    with torch.autocast("neuron", dtype=torch.bfloat16):
        y = layer(x)
        z = torch.softmax(y, dim=-1)
    assert y.dtype == torch.bfloat16
    assert z.dtype == torch.float32
    z.sum().backward()
    assert layer.weight.grad.dtype == torch.float32


def test_rng_is_reproducible_from_manual_seed():
    torch.manual_seed(123)
    a = torch.randn(100, device="neuron")
    d1 = nn.functional.dropout(torch.ones(100, device="neuron"), 0.5)
    torch.manual_seed(123)
    b = torch.randn(100, device="neuron")
    d2 = nn.functional.dropout(torch.ones(100, device="neuron"), 0.5)
    assert torch.equal(a.cpu(), b.cpu()) and torch.equal(d1.cpu(), d2.cpu())
    assert not torch.equal(a.cpu(), torch.randn(100, device="neuron").cpu())
    state = torch.neuron.get_rng_state()
    c = torch.rand(10, device="neuron").cpu()
    torch.neuron.set_rng_state(state)
    assert torch.equal(torch.rand(10, device="neuron").cpu(), c)


def test_rng_state_under_a_dispatch_mode_that_calls_back_into_the_generator():
    # DTensor's LocalTensorMode saves and restores the RNG state from inside
    # __torch_dispatch__: the state's tensor must be made without dispatching
    # while the generator's lock is held, or the mode's call waits forever.
    # In a child with a time limit, so a regression fails instead of hanging.
    import subprocess

    script = (
        "import torch, torch_neuronx\n"
        "from torch.utils._python_dispatch import TorchDispatchMode\n"
        "class Reentrant(TorchDispatchMode):\n"
        "    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
        "        if not getattr(self, 'inside', False):\n"
        "            self.inside = True\n"
        "            torch.neuron.set_rng_state(torch.neuron.get_rng_state())\n"
        "            self.inside = False\n"
        "        return func(*args, **(kwargs or {}))\n"
        "torch.manual_seed(5)\n"
        "with Reentrant():\n"
        "    state = torch.neuron.get_rng_state()\n"
        "    x = torch.rand(4, device='neuron')\n"
        "print(state.device, state.dtype, tuple(state.shape), x.shape[0])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["cpu", "torch.uint8", "(16,)", "4"]


def test_rng_state_on_the_device_is_refused_as_on_cuda():
    state = torch.neuron.get_rng_state()
    try:
        torch.neuron.set_rng_state(state.to("neuron"))
    except TypeError as error:
        assert "RNG state must be a torch.ByteTensor" in str(error)
    else:
        raise AssertionError("a neuron state tensor was accepted")
    torch.neuron.set_rng_state(state)


def test_two_processes_train_at_once_on_one_core(tmp_path):
    import subprocess

    script = (
        "import torch, torch.nn as nn, torch_neuronx\n"
        "torch.manual_seed(0)\n"
        "model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).to('neuron')\n"
        "opt = torch.optim.AdamW(model.parameters())\n"
        "for _ in range(20):\n"
        "    x = torch.randn(16, 32, device='neuron')\n"
        "    loss = model(x).square().mean(); opt.zero_grad(); loss.backward(); opt.step()\n"
        "print(round(loss.item(), 5), torch_neuronx._C._session_info()['cores'])\n"
    )
    env = dict(os.environ, NEURON_RT_VISIBLE_CORES="0")
    runs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [run.communicate(timeout=300) for run in runs]
    for run, (out, err) in zip(runs, outputs):
        assert run.returncode == 0, err
    assert outputs[0][0] == outputs[1][0]  # same seed, same result, no interference
    assert outputs[0][0].split(maxsplit=1)[1].strip() == "[0]"


def test_example_training_script_runs(tmp_path):
    import subprocess

    result = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, "train.py"), "--model", "mlp", "--steps", "3"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "operators that fell back to the CPU: none" in result.stdout


def test_a_foreach_optimizer_step_is_one_launch_per_foreach_call():
    # PyTorch's foreach kernels for devices without their own run tensor by
    # tensor, each Scalar wrapped in a CPU tensor copied to the device: an
    # AdamW step of 6 parameters was 48 launches and copies.
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                          nn.Linear(16, 4)).to("neuron")
    reference = copy.deepcopy(model).cpu()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    cpu_optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    x = torch.randn(4, 8)
    for net, opt, data in ((model, optimizer, x.to("neuron")), (reference, cpu_optimizer, x)):
        net(data).square().mean().backward()
        opt.step()
    torch.neuron.synchronize()
    before = torch_neuronx._C._op_stats()["launches"]
    optimizer.step()
    cpu_optimizer.step()
    torch.neuron.synchronize()
    assert torch_neuronx._C._op_stats()["launches"] - before <= 10
    for trained, expected in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(trained.detach().cpu(), expected.detach(), rtol=1e-5,
                                   atol=1e-6)

"""torch_neuronx end to end: a training step of a small transformer on
`neuron` against the same step on the CPU, and the cost of one small
operator (a 1x1 add) on each, measured in one run against a daemon started
here. Ratios are neuron time / CPU time (lower is better; the target for the
training step is at most 1.5).

Model: d_model 256, 4 layers, 4 heads, sequence 128, batch 8, vocabulary
1000, AdamW; each step ends with loss.item(), so it includes the sync."""
import json
import pathlib
import statistics
import sys
import time

import daemon

WARMUP_STEPS = 2
MEASURED_STEPS = 6
SMALL_OPS = 3000
# Rounds of the small-operator loop, alternating devices; the best of each
# counts. Measured before training: after a CPU step, PyTorch's OpenMP
# threads keep spinning for a while and would take the daemon's core.
SMALL_OP_ROUNDS = 5


def run(build_dir: pathlib.Path) -> dict:
    return daemon.run_worker(build_dir, __file__)


def step_times(model, device, steps):
    import torch
    import torch.nn as nn

    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)
    times = []
    for _ in range(steps):
        tokens = torch.randint(0, 1000, (8, 129), generator=generator)
        start = time.perf_counter()
        inputs, targets = tokens[:, :-1].to(device), tokens[:, 1:].to(device)
        logits = model(inputs)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 1000), targets.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss.item()
        times.append(time.perf_counter() - start)
    return times[WARMUP_STEPS:]


def small_op_seconds(device):
    import torch

    x = torch.ones(1, 1, device=device)
    y = torch.ones(1, 1, device=device)
    for _ in range(100):
        x = x + y
    x.cpu()
    start = time.perf_counter()
    for _ in range(SMALL_OPS):
        x = x + y
    x.cpu()
    return (time.perf_counter() - start) / SMALL_OPS


def worker():
    import copy

    import torch

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
    from train import TinyLM

    small_neuron, small_cpu = float("inf"), float("inf")
    for _ in range(SMALL_OP_ROUNDS):
        small_neuron = min(small_neuron, small_op_seconds("neuron"))
        small_cpu = min(small_cpu, small_op_seconds("cpu"))
    torch.manual_seed(0)
    model = TinyLM(vocab=1000, d_model=256, layers=4, heads=4, seq=128)
    reference = copy.deepcopy(model)
    neuron = statistics.median(step_times(model, "neuron", WARMUP_STEPS + MEASURED_STEPS))
    cpu = statistics.median(step_times(reference, "cpu", WARMUP_STEPS + MEASURED_STEPS))
    print(json.dumps({
        "train_step_neuron_ms": round(neuron * 1e3, 2),
        "train_step_cpu_ms": round(cpu * 1e3, 2),
        "train_step_vs_cpu": round(neuron / cpu, 3),
        "small_op_neuron_us": round(small_neuron * 1e6, 2),
        "small_op_cpu_us": round(small_cpu * 1e6, 2),
        "small_op_vs_cpu": round(small_neuron / small_cpu, 2),
    }))


if __name__ == "__main__" and "--worker" in sys.argv:
    worker()

"""A compute-bound training step of a real model: torchvision's ResNet-18
(random weights, batch 8, 112x112, SGD with momentum) on `neuron` against
the same step on the CPU, in one run against a daemon started here. The
ratio is neuron time / CPU time (goal at most 1.1, required at most 1.3):
the step's time is in convolutions, which the daemon runs with the CPU's
own kernels, so what remains is the per-operator cost of eager mode.

Needs the test packages (torchvision): deploy/dev.sh bench installs them."""
import json
import pathlib
import statistics
import sys
import time

import daemon

WARMUP_STEPS = 2
MEASURED_STEPS = 5


def run(build_dir: pathlib.Path) -> dict:
    return daemon.run_worker(build_dir, __file__)


def step_times(model, device, steps):
    import torch
    import torch.nn.functional as F

    model = model.to(device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    generator = torch.Generator().manual_seed(0)
    times = []
    for _ in range(steps):
        images = torch.randn(8, 3, 112, 112, generator=generator)
        labels = torch.randint(0, 1000, (8,), generator=generator)
        start = time.perf_counter()
        loss = F.cross_entropy(model(images.to(device)), labels.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss.item()
        times.append(time.perf_counter() - start)
    return times[WARMUP_STEPS:]


def worker():
    import copy

    import torch

    import torch_neuronx  # noqa: F401

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "models"))
    from torchvision_compat import import_torchvision

    torchvision = import_torchvision()
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None)
    reference = copy.deepcopy(model)
    neuron = statistics.median(step_times(model, "neuron", WARMUP_STEPS + MEASURED_STEPS))
    cpu = statistics.median(step_times(reference, "cpu", WARMUP_STEPS + MEASURED_STEPS))
    print(json.dumps({
        "resnet18_train_step_neuron_ms": round(neuron * 1e3, 1),
        "resnet18_train_step_cpu_ms": round(cpu * 1e3, 1),
        "resnet18_train_step_vs_cpu": round(neuron / cpu, 3),
    }))


if __name__ == "__main__" and "--worker" in sys.argv:
    worker()

"""torch.profiler on neuron: what profiling costs, and whether the device
time it reports is the daemon's.

- profiler_overhead: the train_step benchmark's step (a small transformer,
  AdamW) under torch.profiler with CPU and PrivateUse1 activities, against
  the same step unprofiled (target: at most 1.15). profiler_overhead_cpu_only
  is the same with the CPU activity alone: what Kineto costs by itself.
- small_op_profiled_vs_unprofiled: one 1x1 add, profiled against not.
- device_time_vs_busy: the device time the profile gives one step (the sum of
  its commands' durations) over the daemon's own busy time for its core in
  that step (target: within 10%, 0.9 to 1.1)."""
import json
import pathlib
import statistics
import sys
import time

import daemon
import train_step

STEPS = 6


def run(build_dir: pathlib.Path) -> dict:
    return daemon.run_worker(build_dir, __file__)


def worker():
    import torch
    import torch.nn as nn
    import torch_neuronx
    from torch.profiler import ProfilerActivity, profile

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
    from train import TinyLM
    from torch_neuronx.profiling import last_capture

    torch.manual_seed(0)
    model = TinyLM(vocab=1000, d_model=256, layers=4, heads=4, seq=128).to("neuron")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)

    def step():
        tokens = torch.randint(0, 1000, (8, 129), generator=generator)
        inputs, targets = tokens[:, :-1].to("neuron"), tokens[:, 1:].to("neuron")
        loss = nn.functional.cross_entropy(model(inputs).reshape(-1, 1000), targets.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss.item()

    def timed_steps(count):
        times = []
        for _ in range(count):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    for _ in range(2):
        step()
    plain = timed_steps(STEPS)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]):
        profiled = timed_steps(STEPS)
    with profile(activities=[ProfilerActivity.CPU]):
        cpu_only = timed_steps(STEPS)

    def core_busy_ns():
        return sum(core["busy_ns"] for core in torch_neuronx._C._core_stats())

    busy_before = core_busy_ns()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]):
        step()
    busy = core_busy_ns() - busy_before
    device = sum(c["end_ns"] - c["start_ns"] for c in last_capture()["commands"]
                 if c["engine"] != "Sync")

    small_plain = train_step.small_op_seconds("neuron")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]):
        small_profiled = train_step.small_op_seconds("neuron")
    print(json.dumps({
        "profiled_step_ms": round(profiled * 1e3, 2),
        "unprofiled_step_ms": round(plain * 1e3, 2),
        "profiler_overhead": round(profiled / plain, 3),
        "profiler_overhead_cpu_only": round(cpu_only / plain, 3),
        "small_op_profiled_vs_unprofiled": round(small_profiled / small_plain, 2),
        "device_time_vs_busy": round(device / busy, 3),
    }))


if __name__ == "__main__" and "--worker" in sys.argv:
    worker()

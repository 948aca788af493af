"""torch.compile(backend="neuron") end to end, each figure against a
baseline measured in the same run:

- compiled_train_step_vs_cpu: the train_step transformer (d_model 256, 4
  layers, 4 heads, sequence 128, batch 8, vocabulary 1000, AdamW), forward
  and backward compiled, steady state (every graph on tier 1), against CPU
  eager; compiled_train_step_tier0_vs_cpu the same with graphs interpreted.
- compiled_vs_inductor_cpu: that step against torch.compile(backend=
  "inductor") on CPU tensors in one process.
- compiled_small_mlp_vs_cpu: the MLP of examples/train.py (64-256-256-10,
  batch 32, AdamW), compiled, against CPU eager (per-operator overhead);
  compiled_small_mlp_with_optimizer_vs_cpu with the AdamW step compiled too.
- compile_cold_s: the first step of a fresh model in a fresh process with
  empty caches (capture, tier-0 load); tier1_ready_s: from there until every
  graph of the step runs compiled; compile_warm_s: the first step in a second
  process, the daemon's caches warm.
- compiled_launches_per_step: graph launches per step, and the eager
  launches around them (loss, optimizer).
- where a compiled step's time goes (client Python and wrappers, launch,
  device), from the daemon's busy time.

Each configuration runs in its own process against its own daemon (graphs
interpreted, or compiled with a fresh disk cache, and a fresh client-side
compile cache). Steady states are the best of ROUNDS rounds; the CPU's
baselines are measured before and after the rest, the faster counting, so
that a slow spell of a shared host does not flatter the device."""
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import daemon

WARMUP = 3
MEASURED = 8
# Rounds of each steady-state measurement; the best counts.
ROUNDS = 3


def _worker(build_dir, mode, extra_args=(), environment=None):
    binary = str(build_dir / "bin" / "neuron-rtd")
    process, sock_path, workdir, _ = daemon.start(binary, extra_args=extra_args)
    try:
        result = subprocess.run(
            [sys.executable, __file__, "--worker", mode], check=True, capture_output=True,
            text=True, timeout=3600,
            env={**os.environ, **(environment or {}), "NEURON_RTD_ADDRESS": f"unix:{sock_path}",
                 "NEURON_RTD_AUTOSTART": "0"})
        return json.loads(result.stdout.strip().splitlines()[-1])
    finally:
        daemon.stop(process, workdir)


def run(build_dir: pathlib.Path) -> dict:
    figures = {}
    figures.update(_worker(build_dir, "baselines"))
    figures.update(_worker(build_dir, "tier0", ("--compile-after-launches", "0")))
    cache = tempfile.mkdtemp(prefix="nrtd-bench-cache-")
    client_cache = tempfile.mkdtemp(prefix="nrtd-bench-client-cache-")
    try:
        compiling = ("--compile-after-launches", "1", "--compiler-python", sys.executable,
                     "--compiler-cache-dir", cache)
        binary = str(build_dir / "bin" / "neuron-rtd")
        process, sock_path, workdir, _ = daemon.start(binary, extra_args=compiling)
        try:
            # A fresh client-side compile cache (AOTAutograd's), shared by
            # the cold and the warm process.
            environment = {**os.environ, "NEURON_RTD_ADDRESS": f"unix:{sock_path}",
                           "NEURON_RTD_AUTOSTART": "0",
                           "TORCHINDUCTOR_CACHE_DIR": client_cache}
            for mode in ("tier1", "warm", "mlp"):
                result = subprocess.run(
                    [sys.executable, __file__, "--worker", mode], check=True,
                    capture_output=True, text=True, timeout=3600, env=environment)
                figures.update(json.loads(result.stdout.strip().splitlines()[-1]))
        finally:
            daemon.stop(process, workdir)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(client_cache, ignore_errors=True)
    # The CPU's baselines again, after: the faster of the two counts.
    for name, value in _worker(build_dir, "baselines").items():
        figures[name] = min(figures[name], value)
    cpu = figures["train_step_cpu_ms"]
    figures["compiled_train_step_vs_cpu"] = round(figures["compiled_train_step_ms"] / cpu, 3)
    figures["compiled_train_step_tier0_vs_cpu"] = round(
        figures["compiled_train_step_tier0_ms"] / cpu, 3)
    figures["compiled_vs_inductor_cpu"] = round(
        figures["compiled_train_step_ms"] / figures["inductor_train_step_cpu_ms"], 3)
    mlp = figures["mlp_step_cpu_ms"]
    figures["compiled_small_mlp_vs_cpu"] = round(figures["compiled_mlp_step_ms"] / mlp, 3)
    figures["compiled_small_mlp_tier0_vs_cpu"] = round(
        figures["compiled_mlp_step_tier0_ms"] / mlp, 3)
    figures["compiled_small_mlp_with_optimizer_vs_cpu"] = round(
        figures["compiled_mlp_step_with_optimizer_ms"] / mlp, 3)
    return figures


def _models():
    import torch

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
    from train import TinyLM

    torch.manual_seed(0)
    transformer = TinyLM(vocab=1000, d_model=256, layers=4, heads=4, seq=128)
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                              torch.nn.ReLU(), torch.nn.Linear(256, 10))
    return transformer, mlp


def _transformer_step(model, device, compiled_optimizer=False):
    import torch
    import torch.nn as nn

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)
    optimizer_step = torch.compile(optimizer.step, backend="neuron") if compiled_optimizer \
        else optimizer.step

    def step():
        tokens = torch.randint(0, 1000, (8, 129), generator=generator)
        inputs, targets = tokens[:, :-1].to(device), tokens[:, 1:].to(device)
        loss = nn.functional.cross_entropy(model(inputs).reshape(-1, 1000), targets.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer_step()
        return loss.item()

    return step


def _mlp_step(model, device, compiled_optimizer=False):
    import torch
    import torch.nn as nn

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3,
                                  capturable=compiled_optimizer and device != "cpu")
    generator = torch.Generator().manual_seed(0)
    data = [(torch.randn(32, 64, generator=generator).to(device),
             torch.randint(0, 10, (32,), generator=generator).to(device)) for _ in range(4)]
    optimizer_step = torch.compile(optimizer.step, backend="neuron") if compiled_optimizer \
        else optimizer.step
    counter = [0]

    def step():
        x, y = data[counter[0] % len(data)]
        counter[0] += 1
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer_step()
        return loss

    return step


def _time(step, steps=MEASURED, sync=None, per_step_sync=False):
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        if per_step_sync and sync is not None:
            sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _time_many(step, count, sync):
    """Seconds per step: the best of ROUNDS runs of `count` steps."""
    for _ in range(20):
        step()
    sync()
    rounds = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(count):
            step()
        sync()
        rounds.append((time.perf_counter() - start) / count)
    return min(rounds)


def _time_rounds(step):
    """Seconds per step: the best of ROUNDS medians of MEASURED steps."""
    return min(_time(step) for _ in range(ROUNDS))


def _await_tier1(timeout=3600):
    import torch_neuronx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        graphs = torch_neuronx.compiled_graphs()
        states = [graph["compile_state"] for graph in graphs]
        if graphs and all(state not in ("compiling", "interpreted") for state in states):
            return states
        time.sleep(0.2)
    raise TimeoutError(f"graphs not compiled within {timeout} s: {states}")


def _busy_ns():
    """Device time the daemon's cores have spent so far."""
    import torch_neuronx

    return sum(core["busy_ns"] for core in torch_neuronx._C._core_stats())


def worker(mode):
    import torch
    import torch_neuronx

    transformer, mlp = _models()
    sync = torch.neuron.synchronize
    if mode == "baselines":
        cpu_step = _transformer_step(transformer, "cpu")
        for _ in range(WARMUP):
            cpu_step()
        cpu = _time_rounds(cpu_step)
        mlp_cpu = _time_many(_mlp_step(mlp, "cpu"), 300, lambda: None)
        inductor_model = torch.compile(_models()[0], backend="inductor")
        step = _transformer_step(inductor_model, "cpu")
        for _ in range(WARMUP):
            step()
        inductor = _time_rounds(step)
        print(json.dumps({"train_step_cpu_ms": round(cpu * 1e3, 2),
                          "inductor_train_step_cpu_ms": round(inductor * 1e3, 2),
                          "mlp_step_cpu_ms": round(mlp_cpu * 1e3, 3)}))
        return
    if mode == "tier0":
        model = torch.compile(transformer.to("neuron"), backend="neuron")
        step = _transformer_step(model, "neuron")
        for _ in range(WARMUP):
            step()
        tier0 = _time_rounds(step)
        mlp_model = torch.compile(mlp.to("neuron"), backend="neuron")
        mlp_tier0 = _time_many(_mlp_step(mlp_model, "neuron"), 300, sync)
        print(json.dumps({"compiled_train_step_tier0_ms": round(tier0 * 1e3, 2),
                          "compiled_mlp_step_tier0_ms": round(mlp_tier0 * 1e3, 3)}))
        return
    if mode in ("tier1", "warm"):
        started = time.perf_counter()
        model = torch.compile(transformer.to("neuron"), backend="neuron")
        step = _transformer_step(model, "neuron")
        step()
        first_step = time.perf_counter() - started
        if mode == "warm":
            print(json.dumps({"compile_warm_s": round(first_step, 2)}))
            return
        _await_tier1()
        tier1_ready = time.perf_counter() - started
        for _ in range(WARMUP):
            step()
        graphs_before = sum(graph["launches"] for graph in torch_neuronx.compiled_graphs())
        eager_before = torch_neuronx._C._op_stats()["launches"]
        busy_before = _busy_ns()
        steady = _time_rounds(step)
        steps = ROUNDS * MEASURED
        launches = (sum(graph["launches"] for graph in torch_neuronx.compiled_graphs())
                    - graphs_before) / steps
        eager = (torch_neuronx._C._op_stats()["launches"] - eager_before) / steps
        device_ms = (_busy_ns() - busy_before) / steps / 1e6
        print(json.dumps({
            "compile_cold_s": round(first_step, 2),
            "tier1_ready_s": round(tier1_ready, 1),
            "compiled_train_step_ms": round(steady * 1e3, 2),
            "compiled_train_step_device_ms": round(device_ms, 2),
            "compiled_launches_per_step": launches,
            "eager_launches_per_compiled_step": eager,
        }))
        return
    if mode == "mlp":
        # A process of its own, as a user's small model would have.
        mlp_step = _mlp_step(torch.compile(mlp.to("neuron"), backend="neuron"), "neuron")
        mlp_step()
        _await_tier1()
        mlp_tier1 = _time_many(mlp_step, 300, sync)
        _, mlp_again = _models()
        with_optimizer = _mlp_step(torch.compile(mlp_again.to("neuron"), backend="neuron"),
                                   "neuron", compiled_optimizer=True)
        with_optimizer()
        _await_tier1()
        mlp_optimizer = _time_many(with_optimizer, 300, sync)
        print(json.dumps({
            "compiled_mlp_step_ms": round(mlp_tier1 * 1e3, 3),
            "compiled_mlp_step_with_optimizer_ms": round(mlp_optimizer * 1e3, 3),
        }))


if __name__ == "__main__" and "--worker" in sys.argv:
    worker(sys.argv[sys.argv.index("--worker") + 1])

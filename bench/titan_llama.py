"""TorchTitan's llama3 debug model, eager, on `neuron` against the CPU: the
user's `torchrun -m torchtitan.train` with tests/models/titan/llama3_debug.toml
(6 layers, dim 256, batch 2 x 256 tokens, AdamW, selective activation
checkpointing), both twins from one seed checkpoint, in one run against a
daemon started here.

Step time comes from TorchTitan's own tokens/s (median of the steps after
the first two). Where the time goes comes from the daemon's core counters,
read around two neuron jobs of different lengths so that start-up cancels
out: commands per step (one per operator, copy and event) and the core's
busy time per step. The rest of the step, the core idle while the client
prepares and sends commands, is per-command cost (reported per command):
what the compiled path (torch.compile, one launch per graph) removes.

Needs the test packages (TorchTitan): deploy/dev.sh bench installs them."""
import json
import pathlib
import statistics
import sys
import tempfile
import tomllib

import daemon

SHORT_STEPS = 3
LONG_STEPS = 9
WARMUP_STEPS = 2


def run(build_dir: pathlib.Path) -> dict:
    return daemon.run_worker(build_dir, __file__, timeout=2400)


def median_step_ms(steps, tokens_per_step):
    return statistics.median(tokens_per_step / tps * 1e3 for _, _, _, tps in
                             steps[WARMUP_STEPS:])


def core_counters(core_stats):
    entry = core_stats()[0]
    return entry["completed"], entry["busy_ns"]


def worker():
    import torch

    import torch_neuronx  # noqa: F401
    from torch_neuronx import _C

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "models"))
    import titan_job

    torch.neuron.synchronize()  # opens this process's session for the counters
    with tempfile.TemporaryDirectory(prefix="titan-bench-") as job_dir:
        titan_job.build_assets(job_dir)
        seed = titan_job.create_seed_checkpoint(job_dir)
        counters = []
        runs = {}
        for steps in (SHORT_STEPS, LONG_STEPS):
            before = core_counters(_C._core_stats)
            _, runs[steps] = titan_job.train(job_dir, seed, "neuron",
                                             "--training.steps", str(steps))
            after = core_counters(_C._core_stats)
            counters.append([a - b for a, b in zip(after, before)])
        _, on_cpu = titan_job.train(job_dir, seed, "cpu", "--training.steps", str(LONG_STEPS))

    with open(titan_job.CONFIG, "rb") as config:
        training = tomllib.load(config)["training"]
    tokens_per_step = training["local_batch_size"] * training["seq_len"]
    neuron_ms = median_step_ms(runs[LONG_STEPS], tokens_per_step)
    cpu_ms = median_step_ms(on_cpu, tokens_per_step)
    extra_steps = LONG_STEPS - SHORT_STEPS
    commands = (counters[1][0] - counters[0][0]) / extra_steps
    busy_ms = (counters[1][1] - counters[0][1]) / extra_steps / 1e6
    print(json.dumps({
        "titan_llama_debug_step_neuron_ms": round(neuron_ms, 1),
        "titan_llama_debug_step_cpu_ms": round(cpu_ms, 1),
        "titan_llama_debug_step_vs_cpu": round(neuron_ms / cpu_ms, 3),
        "titan_llama_debug_commands_per_step": round(commands),
        "titan_llama_debug_device_busy_ms": round(busy_ms, 1),
        "titan_llama_debug_core_idle_us_per_command": round(
            (neuron_ms - busy_ms) * 1e3 / commands, 2),
    }))


if __name__ == "__main__" and "--worker" in sys.argv:
    worker()

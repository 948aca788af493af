"""torch.distributed on one host: all_reduce between 2 ranks (processes) of
neuron-rtd, against gloo on CPU tensors in the same run.

- allreduce_64m_vs_gloo: bus bandwidth of a 64 MiB float32 all_reduce on
  neuron / gloo's (higher is better; required >= 3, goal >= 5). For 2 ranks
  the bus bandwidth is bytes / time.
- allreduce_8b_p50_us: median latency of an 8-byte all_reduce on neuron,
  synchronized each time (gloo's beside it)."""
import json
import os
import pathlib
import socket
import statistics
import sys
import time

import daemon

WORLD = 2
LARGE_BYTES = 64 << 20
LARGE_ITERATIONS = 8
SMALL_ITERATIONS = 300


def run(build_dir: pathlib.Path) -> dict:
    return daemon.run_worker(build_dir, __file__)


def timed(function, iterations):
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return times


def rank_main(rank, port):
    import datetime

    import torch
    import torch.distributed as dist

    import torch_neuronx  # noqa: F401

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("cpu:gloo,neuron:neuron", rank=rank, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=120))
    count = LARGE_BYTES // 4
    on_cpu = torch.ones(count)
    on_neuron = torch.ones(count, device="neuron")

    def neuron_large():
        dist.all_reduce(on_neuron)
        torch.neuron.synchronize()

    small_cpu = torch.ones(2)
    small_neuron = torch.ones(2, device="neuron")

    def neuron_small():
        dist.all_reduce(small_neuron)
        torch.neuron.synchronize()

    results = {}
    for name, function, iterations in [
            ("gloo_large", lambda: dist.all_reduce(on_cpu), LARGE_ITERATIONS),
            ("neuron_large", neuron_large, LARGE_ITERATIONS),
            ("gloo_small", lambda: dist.all_reduce(small_cpu), SMALL_ITERATIONS),
            ("neuron_small", neuron_small, SMALL_ITERATIONS)]:
        dist.barrier()
        function()
        results[name] = statistics.median(timed(function, iterations))
    dist.destroy_process_group()
    if rank == 0:
        gloo_bandwidth = LARGE_BYTES / results["gloo_large"] / 1e9
        neuron_bandwidth = LARGE_BYTES / results["neuron_large"] / 1e9
        print(json.dumps({
            "allreduce_64m_gloo_busbw_gbs": round(gloo_bandwidth, 2),
            "allreduce_64m_neuron_busbw_gbs": round(neuron_bandwidth, 2),
            "allreduce_64m_vs_gloo": round(neuron_bandwidth / gloo_bandwidth, 2),
            "allreduce_8b_gloo_p50_us": round(results["gloo_small"] * 1e6, 1),
            "allreduce_8b_p50_us": round(results["neuron_small"] * 1e6, 1),
        }), flush=True)


def worker():
    import torch.multiprocessing as mp

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mp.spawn(rank_main, args=(port,), nprocs=WORLD)


if __name__ == "__main__" and "--worker" in sys.argv:
    worker()

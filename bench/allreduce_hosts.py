"""torch.distributed across hosts: two daemons on this machine play two
hosts joined by libfabric (tcp;ofi_rxm on the loopback interface), one rank
on each, against gloo on CPU tensors between the same two processes.

- allreduce_2host_vs_gloo: bus bandwidth of a 64 MiB float32 all_reduce on
  neuron / gloo's (required >= 1).
- allreduce_2host_8b_p50_us: median latency of an 8-byte all_reduce across
  the two daemons (recursive doubling: one exchange), synchronized each time.
- allreduce_2host_doubling_gain: the same all_reduce's median latency with
  the daemons forced to the ring ([fabric] recursive_doubling_max_bytes = 0:
  a reduce-scatter step then an all-gather step) / with recursive doubling."""
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile

import daemon
from allreduce import timed

LARGE_BYTES = 64 << 20
LARGE_ITERATIONS = 6
SMALL_ITERATIONS = 200
FABRIC = ["--fabric-provider", "tcp;ofi_rxm", "--fabric-interface", "lo"]


def run(build_dir: pathlib.Path) -> dict:
    binary = str(build_dir / "bin" / "neuron-rtd")
    results = run_ranks(binary, "/dev/null", large=True)
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as ring_only:
        ring_only.write("[fabric]\nrecursive_doubling_max_bytes = 0\n")
        ring_only.flush()
        by_ring = run_ranks(binary, ring_only.name, large=False)
    results["allreduce_2host_8b_ring_p50_us"] = by_ring["allreduce_2host_8b_p50_us"]
    results["allreduce_2host_doubling_gain"] = round(
        by_ring["allreduce_2host_8b_p50_us"] / results["allreduce_2host_8b_p50_us"], 2)
    return results


def run_ranks(binary, config, large):
    hosts = [daemon.start(binary, extra_args=FABRIC, config=config) for _ in range(2)]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    try:
        ranks = [subprocess.Popen(
            [sys.executable, __file__, "--rank", str(rank), str(port), str(int(large))],
            stdout=subprocess.PIPE, text=True,
            env={**os.environ, "NEURON_RTD_ADDRESS": f"unix:{hosts[rank][1]}",
                 "NEURON_RTD_AUTOSTART": "0"}) for rank in range(2)]
        outputs = [rank.communicate(timeout=1200)[0] for rank in ranks]
        if any(rank.returncode != 0 for rank in ranks):
            raise RuntimeError("a rank of the two-host all_reduce failed")
    finally:
        for process, _, workdir, _ in hosts:
            daemon.stop(process, workdir)
    return json.loads(outputs[0].strip().splitlines()[-1])


def rank_main(rank, port, large):
    import datetime

    import torch
    import torch.distributed as dist

    import torch_neuronx  # noqa: F401

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("cpu:gloo,neuron:neuron", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=120))
    count = LARGE_BYTES // 4
    on_cpu = torch.ones(count)
    on_neuron = torch.ones(count, device="neuron")
    small_neuron = torch.ones(2, device="neuron")

    def neuron_large():
        dist.all_reduce(on_neuron)
        torch.neuron.synchronize()

    def neuron_small():
        dist.all_reduce(small_neuron)
        torch.neuron.synchronize()

    results = {}
    cases = [("neuron_small", neuron_small, SMALL_ITERATIONS)]
    if large:
        cases += [("gloo_large", lambda: dist.all_reduce(on_cpu), LARGE_ITERATIONS),
                  ("neuron_large", neuron_large, LARGE_ITERATIONS)]
    for name, function, iterations in cases:
        dist.barrier()
        function()
        results[name] = statistics.median(timed(function, iterations))
    dist.destroy_process_group()
    if rank == 0 and not large:
        print(json.dumps({"allreduce_2host_8b_p50_us": round(results["neuron_small"] * 1e6, 1)}),
              flush=True)
    elif rank == 0:
        gloo_bandwidth = LARGE_BYTES / results["gloo_large"] / 1e9
        neuron_bandwidth = LARGE_BYTES / results["neuron_large"] / 1e9
        print(json.dumps({
            "allreduce_2host_gloo_busbw_gbs": round(gloo_bandwidth, 2),
            "allreduce_2host_neuron_busbw_gbs": round(neuron_bandwidth, 2),
            "allreduce_2host_vs_gloo": round(neuron_bandwidth / gloo_bandwidth, 2),
            "allreduce_2host_8b_p50_us": round(results["neuron_small"] * 1e6, 1),
        }), flush=True)


if __name__ == "__main__" and "--rank" in sys.argv:
    rank_main(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1")

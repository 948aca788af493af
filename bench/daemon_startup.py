"""How fast neuron-rtd starts, stops and answers neuronctl.

Start-up is timed from spawn to the daemon's sd_notify READY=1 (the moment
it serves), for the small default preset (the baseline) and for
trn2.48xlarge (16 chips, 1.5 TiB of reserved HBM) in the same run: their
ratio shows what a large topology costs at start. `neuron-rtd --version`
(exec, loading libtorch, exit) is reported beside them for scale.
"""
import pathlib
import statistics
import subprocess
import time

import daemon

RUNS = 7


def _median_ms(samples):
    return round(statistics.median(samples) * 1000.0, 3)


def run(build_dir: pathlib.Path) -> dict:
    binary = str(build_dir / "bin" / "neuron-rtd")
    neuronctl = str(build_dir / "bin" / "neuronctl")

    version = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run([binary, "--version"], check=True, stdout=subprocess.DEVNULL)
        version.append(time.perf_counter() - started)

    figures = {"daemon_version_exec_ms": _median_ms(version)}
    for preset, key in (("dev", "dev"), ("trn2.48xlarge", "48xl")):
        ready, stop, ls = [], [], []
        for _ in range(RUNS):
            process, sock_path, workdir, ready_s = daemon.start(binary, preset)
            ready.append(ready_s)
            started = time.perf_counter()
            subprocess.run([neuronctl, "--address", f"unix:{sock_path}", "ls", "--json"],
                           check=True, stdout=subprocess.DEVNULL)
            ls.append(time.perf_counter() - started)
            stop.append(daemon.stop(process, workdir))
        figures[f"daemon_ready_{key}_ms"] = _median_ms(ready)
        figures[f"daemon_stop_{key}_ms"] = _median_ms(stop)
        figures[f"neuronctl_ls_{key}_ms"] = _median_ms(ls)
    figures["daemon_ready_48xl_vs_dev"] = round(
        figures["daemon_ready_48xl_ms"] / figures["daemon_ready_dev_ms"], 3)
    return figures

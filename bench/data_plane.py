"""The data plane: enqueue cost, round trip, copy bandwidth against memcpy,
processes sharing a core (bench/data_plane_bench.cc, against a daemon
started here)."""
import json
import pathlib
import subprocess

import daemon


def run(build_dir: pathlib.Path) -> dict:
    process, sock_path, workdir, _ = daemon.start(str(build_dir / "bin" / "neuron-rtd"))
    try:
        result = subprocess.run(
            [str(build_dir / "bin" / "neuron_bench_data_plane"), f"unix:{sock_path}"],
            check=True, capture_output=True, text=True, timeout=600)
    finally:
        daemon.stop(process, workdir)
    return json.loads(result.stdout.strip().splitlines()[-1])

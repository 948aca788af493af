#!/usr/bin/env python3
"""Runs every benchmark of the project and prints their figures.

Each benchmark measures against a baseline taken in the same run and reports
ratios next to raw numbers. The last line printed is one JSON object holding
every figure, for tools to read.

    deploy/dev.sh bench          (builds first)
    .venv/bin/python bench/run.py --build-dir build
"""
import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import allreduce  # noqa: E402
import allreduce_hosts  # noqa: E402
import compiled_step  # noqa: E402
import core_sharing  # noqa: E402
import daemon_startup  # noqa: E402
import data_plane  # noqa: E402
import first_op  # noqa: E402
import exporter  # noqa: E402
import neuronctl_top  # noqa: E402
import nki_kernels  # noqa: E402
import nrt_backend  # noqa: E402
import profiler  # noqa: E402
import resnet_step  # noqa: E402
import titan_llama  # noqa: E402
import train_step  # noqa: E402

BENCHMARKS = [daemon_startup, first_op, data_plane, core_sharing, train_step, resnet_step,
              titan_llama, compiled_step, allreduce, allreduce_hosts, profiler, nrt_backend,
              neuronctl_top, exporter, nki_kernels]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build-dir", default="build", type=pathlib.Path)
    args = parser.parse_args()
    figures = {}
    for benchmark in BENCHMARKS:
        print(f"== {benchmark.__name__}", flush=True)
        results = benchmark.run(args.build_dir.resolve())
        for name, value in results.items():
            print(f"  {name:32s} {value:g}", flush=True)
        figures.update(results)
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

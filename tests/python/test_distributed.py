"""torch.distributed with the neuron backend: ranks are processes, each a
session of the test daemon (distributed_cases.py holds what they run)."""

import os
import random
import socket
import subprocess
import sys

import pytest

CASES = os.path.join(os.path.dirname(__file__), "distributed_cases.py")


def free_port():
    """A free port for a case's rendezvous. pytest-xdist runs test files in
    parallel processes: a port the kernel hands one of them (bind to 0) and
    that is released until the case's store binds it can be handed to
    another meanwhile, whose ranks then join the wrong group. Each worker
    takes its ports from a range of its own, below the kernel's ephemeral
    ports."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    first = 20000 + 1000 * (int(worker) if worker.isdigit() else 0)
    for port in random.sample(range(first, first + 1000), 1000):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {first}-{first + 999}")


def run_case(case, world=2):
    result = subprocess.run(
        [sys.executable, CASES, case, str(world), str(free_port())],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("world", [2, 3])
def test_every_collective_and_dtype_matches_the_cpu_and_gloo(world):
    run_case("collectives", world)


def test_point_to_point_all_to_all_gather_scatter_and_futures():
    run_case("point_to_point", 3)


def test_ddp_matches_one_process_training_and_keeps_replicas_identical():
    run_case("ddp")


def test_a_dead_rank_fails_its_peers_collective_naming_it():
    run_case("dead_rank")


def test_a_dead_rank_fails_its_peers_async_collective_naming_it():
    run_case("dead_rank_async")


def test_cpu_only_programs_keep_working_beside_the_neuron_backend():
    run_case("cpu_only")


def test_device_mesh_and_subgroups_on_neuron():
    run_case("device_mesh")


def test_dtensor_distribute_redistribute_and_matmul():
    run_case("dtensor")


def test_fsdp2_matches_one_process_training():
    run_case("fsdp2")


def test_tensor_parallel_matches_the_unsharded_module():
    run_case("tensor_parallel")


def test_pipeline_parallel_matches_the_unsplit_model():
    run_case("pipeline")


def test_async_collectives_overlap_compute_on_the_current_stream():
    run_case("overlap")

"""torch.distributed across hosts: two daemons on this machine play two
hosts, their libfabric endpoints (tcp;ofi_rxm on the loopback interface)
joined; each rank is a process pointed at its host's daemon, as torchrun
--nnodes 2 would start them (distributed_cases.py holds what they run)."""

import os
import re
import subprocess
import sys

import pytest

from test_distributed import CASES, free_port

FABRIC = ["--fabric-provider", "tcp;ofi_rxm", "--fabric-interface", "lo"]


def start_hosts(count, own_daemon, daemon_device_config, tmp_path):
    addresses = []
    for host in range(count):
        directory = tmp_path / f"host{host}"
        directory.mkdir()
        socket_path = str(directory / "neuron-rtd.sock")
        own_daemon(socket_path, FABRIC, daemon_device_config(str(directory)))
        addresses.append("unix:" + socket_path)
    return addresses


@pytest.fixture
def two_hosts(own_daemon, daemon_device_config, tmp_path):
    return start_hosts(2, own_daemon, daemon_device_config, tmp_path)


def run_across_hosts(addresses, case, ranks_per_host=2):
    result = subprocess.run(
        [sys.executable, CASES, "--hosts", ",".join(addresses), case, str(ranks_per_host),
         str(free_port())],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_every_collective_and_dtype_across_two_hosts(two_hosts):
    run_across_hosts(two_hosts, "collectives")


def test_one_rank_per_host(two_hosts):
    run_across_hosts(two_hosts, "collectives", ranks_per_host=1)


def test_all_reduce_by_ring_and_recursive_doubling_across_two_hosts(two_hosts):
    run_across_hosts(two_hosts, "all_reduce_sizes")


def test_three_hosts(own_daemon, daemon_device_config, tmp_path):
    """Not a power of two: recursive doubling folds the third host in; the
    ring has three steps each way."""
    hosts = start_hosts(3, own_daemon, daemon_device_config, tmp_path)
    run_across_hosts(hosts, "all_reduce_sizes", ranks_per_host=1)
    run_across_hosts(hosts, "collectives", ranks_per_host=1)


def test_point_to_point_all_to_all_gather_scatter_across_hosts(two_hosts):
    run_across_hosts(two_hosts, "point_to_point")


def test_ddp_across_hosts_matches_one_process_training(two_hosts):
    run_across_hosts(two_hosts, "ddp")


def test_fsdp2_across_hosts(two_hosts):
    run_across_hosts(two_hosts, "fsdp2")


def test_device_mesh_and_subgroups_across_hosts(two_hosts):
    run_across_hosts(two_hosts, "device_mesh")


def test_pipeline_stages_on_two_hosts(two_hosts):
    run_across_hosts(two_hosts, "pipeline", ranks_per_host=1)


def test_a_dead_rank_fails_the_other_hosts_ranks_naming_it(two_hosts):
    run_across_hosts(two_hosts, "dead_rank")


def test_a_daemon_without_a_fabric_is_named(own_daemon, daemon_device_config, tmp_path,
                                             two_hosts):
    directory = tmp_path / "plain"
    directory.mkdir()
    socket_path = str(directory / "neuron-rtd.sock")
    own_daemon(socket_path, (), daemon_device_config(str(directory)))
    result = subprocess.run(
        [sys.executable, CASES, "--hosts", f"{two_hosts[0]},unix:{socket_path}", "collectives",
         "1", str(free_port())],
        capture_output=True, text=True, timeout=600)
    assert result.returncode != 0
    assert "has no fabric" in result.stderr, result.stderr


def test_cpu_gloo_unaffected_across_hosts(two_hosts):
    run_across_hosts(two_hosts, "cpu_only")


def test_torchrun_on_two_hosts_trains_identical_replicas(two_hosts):
    """As a user runs it: one torchrun per host (--nnodes 2), each host's
    ranks pointed at its daemon, examples/distributed/ddp_train.py."""
    script = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "distributed",
                          "ddp_train.py")
    port = str(free_port())
    nodes = [subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--node-rank", str(node),
         "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", port, script],
        env=dict(os.environ, NEURON_RTD_ADDRESS=two_hosts[node]), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True) for node in range(2)]
    outputs = [node.communicate(timeout=600)[0] for node in nodes]
    for node, output in zip(nodes, outputs):
        assert node.returncode == 0, output
    text = "\n".join(outputs)
    checksums = dict(re.findall(r"^rank (\d+) checksum (\S+)$", text, re.MULTILINE))
    assert sorted(checksums) == ["0", "1", "2", "3"], text
    assert len(set(checksums.values())) == 1, checksums
    first, last = [float(loss) for loss in re.findall(r"^step \d+ loss (\S+)$", text, re.MULTILINE)]
    assert last < first

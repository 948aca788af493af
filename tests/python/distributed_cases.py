"""Multi-process cases of test_distributed.py: ``python distributed_cases.py
CASE WORLD PORT`` spawns WORLD ranks that run CASE against the daemon at
$NEURON_RTD_ADDRESS, and exits non-zero when a rank fails;
``python distributed_cases.py --hosts ADDRESS,ADDRESS CASE RANKS_PER_HOST
PORT`` runs CASE with each daemon playing a host."""

import datetime
import os
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import torch_neuronx  # noqa: F401  (registers the neuron backend)

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.int64, torch.int8,
          torch.uint8]


def rank_input(rank, dtype, numel=6):
    values = torch.arange(numel, dtype=torch.float64) + 3 * rank + 1
    if dtype in (torch.int8, torch.uint8):
        values = values % 5 + 1
    return values.to(dtype)


def expect_equal(actual, expected, what):
    actual = actual.cpu()
    if actual.dtype.is_floating_point:
        ok = torch.allclose(actual.double(), expected.double(), rtol=1e-2, atol=1e-2)
    else:
        ok = torch.equal(actual, expected.to(actual.dtype))
    assert ok, f"{what}: got {actual.tolist()}, expected {expected.tolist()}"


def case_collectives(rank, world):
    """Every collective and dtype against the result computed on the CPU,
    and the reductions gloo supports against gloo's own result."""
    device = torch.device("neuron")
    inputs = [rank_input(r, torch.float64) for r in range(world)]
    for dtype in DTYPES:
        mine = rank_input(rank, dtype)
        everyone = [rank_input(r, dtype) for r in range(world)]
        ops = {dist.ReduceOp.SUM: lambda ts: sum(t.double() for t in ts),
               dist.ReduceOp.MAX: lambda ts: torch.stack([t.double() for t in ts]).amax(0),
               dist.ReduceOp.MIN: lambda ts: torch.stack([t.double() for t in ts]).amin(0),
               dist.ReduceOp.PRODUCT: lambda ts: torch.stack([t.double() for t in ts]).prod(0)}
        if dtype.is_floating_point:
            ops[dist.ReduceOp.AVG] = lambda ts: sum(t.double() for t in ts) / world
        for op, reference in ops.items():
            tensor = mine.to(device)
            dist.all_reduce(tensor, op=op)
            expected = reference(everyone)
            if not dtype.is_floating_point:
                expected = expected.to(dtype)
            expect_equal(tensor, expected, f"all_reduce {op} {dtype}")
            if op != dist.ReduceOp.AVG and dtype in (torch.float32, torch.int64):
                on_cpu = mine.clone()
                dist.all_reduce(on_cpu, op=op)  # gloo
                expect_equal(tensor, on_cpu, f"all_reduce {op} {dtype} against gloo")
        gathered = torch.empty(world * mine.numel(), dtype=dtype, device=device)
        dist.all_gather_into_tensor(gathered, mine.to(device))
        expect_equal(gathered, torch.cat(everyone), f"all_gather_into_tensor {dtype}")
        pieces = [torch.empty_like(mine, device=device) for _ in range(world)]
        dist.all_gather(pieces, mine.to(device))
        for r in range(world):
            expect_equal(pieces[r], everyone[r], f"all_gather {dtype} piece {r}")
        big = torch.cat([rank_input(rank, dtype, 4) + r for r in range(world)])
        out = torch.empty(4, dtype=dtype, device=device)
        dist.reduce_scatter_tensor(out, big.to(device))
        expected = sum(rank_input(r, dtype, 4).double() + rank for r in range(world))
        expect_equal(out, expected, f"reduce_scatter_tensor {dtype}")
        tensor = mine.to(device)
        dist.broadcast(tensor, src=world - 1)
        expect_equal(tensor, everyone[world - 1], f"broadcast {dtype}")
    # PREMUL_SUM, as FSDP's gradient division uses it.
    tensor = inputs[rank].float().to(device)
    dist.all_reduce(tensor, op=dist._make_nccl_premul_sum(0.5))
    expect_equal(tensor, sum(inputs) * 0.5, "all_reduce PREMUL_SUM")
    # A rank's tensors may be large and non-trivially sized.
    large = torch.full((1 << 20,), float(rank + 1), device=device)
    dist.all_reduce(large)
    assert large.sum().item() == (1 << 20) * sum(r + 1 for r in range(world))
    # Bitwise reductions are refused at the call, as NCCL refuses them.
    try:
        dist.all_reduce(torch.ones(2, dtype=torch.int32, device=device), op=dist.ReduceOp.BAND)
    except ValueError as error:
        assert "ReduceOp" in str(error), error
    else:
        raise AssertionError("BAND was not refused")


def case_all_reduce_sizes(rank, world):
    """all_reduce on both sides of the daemons' switch from recursive
    doubling to the ring (64 KiB), exact, and the same bits on every rank."""
    device = torch.device("neuron")
    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        for numel in (1, 5, 32767, 32768, 32769, 300001):
            mine = (torch.arange(numel, dtype=torch.float64) * 7 + rank * 3) % 13 - 6
            expected = sum((torch.arange(numel, dtype=torch.float64) * 7 + r * 3) % 13 - 6
                           for r in range(world))
            tensor = mine.to(dtype).to(device)
            dist.all_reduce(tensor)
            assert torch.equal(tensor.cpu().double(), expected), f"{dtype} {numel}"
            copies = [torch.empty_like(tensor) for _ in range(world)]
            dist.all_gather(copies, tensor)
            for r, copy in enumerate(copies):
                assert torch.equal(copy.cpu(), tensor.cpu()), f"rank {r} differs: {dtype} {numel}"
    averaged = torch.full((100000,), float(rank), device=device)
    dist.all_reduce(averaged, op=dist.ReduceOp.AVG)
    assert torch.equal(averaged.cpu(), torch.full((100000,), (world - 1) / 2))


def case_point_to_point(rank, world):
    device = torch.device("neuron")
    # A ring: every rank sends to the next and receives from the previous in
    # one batch (each rank sends before it receives: grouped, no deadlock).
    send = torch.full((3,), float(rank), device=device)
    recv = torch.empty(3, device=device)
    requests = dist.batch_isend_irecv([
        dist.P2POp(dist.isend, send, (rank + 1) % world),
        dist.P2POp(dist.irecv, recv, (rank - 1) % world)])
    for request in requests:
        request.wait()
    expect_equal(recv, torch.full((3,), float((rank - 1) % world)), "batch_isend_irecv")
    if rank == 0:
        dist.send(torch.arange(4.0, device=device), dst=1)
    elif rank == 1:
        got = torch.empty(4, device=device)
        dist.recv(got, src=0)
        expect_equal(got, torch.arange(4.0), "send/recv")
    # Uneven all_to_all_single: rank r sends r+1+p rows to rank p.
    input_splits = [rank + 1 + p for p in range(world)]
    output_splits = [r + 1 + rank for r in range(world)]
    data = torch.cat([torch.full((n, 2), float(10 * rank + p)) for p, n in enumerate(input_splits)])
    out = torch.empty(sum(output_splits), 2, device=device)
    dist.all_to_all_single(out, data.to(device), output_splits, input_splits)
    expected = torch.cat([torch.full((n, 2), float(10 * r + rank))
                          for r, n in enumerate(output_splits)])
    expect_equal(out, expected, "all_to_all_single (uneven)")
    outs = [torch.empty(2, device=device) for _ in range(world)]
    dist.all_to_all(outs, [torch.full((2,), float(10 * rank + p), device=device)
                           for p in range(world)])
    for r in range(world):
        expect_equal(outs[r], torch.full((2,), float(10 * r + rank)), "all_to_all")
    mine = torch.full((2,), float(rank + 1), device=device)
    gathered = [torch.empty(2, device=device) for _ in range(world)] if rank == 0 else None
    dist.gather(mine, gathered, dst=0)
    if rank == 0:
        for r in range(world):
            expect_equal(gathered[r], torch.full((2,), float(r + 1)), "gather")
    piece = torch.empty(2, device=device)
    sources = [torch.full((2,), float(5 * r), device=device) for r in range(world)]
    dist.scatter(piece, sources if rank == 0 else None, src=0)
    expect_equal(piece, torch.full((2,), float(5 * rank)), "scatter")
    total = torch.full((2,), float(rank + 1), device=device)
    dist.reduce(total, dst=0)
    if rank == 0:
        expect_equal(total, torch.full((2,), float(sum(r + 1 for r in range(world)))), "reduce")
    # An asynchronous collective's future carries its result (DDP's hooks).
    future = dist.all_reduce(torch.ones(2, device=device), async_op=True).get_future()
    expect_equal(future.wait()[0], torch.full((2,), float(world)), "async all_reduce future")


def mlp_and_cpu_twin():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    twin = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    twin.load_state_dict(model.state_dict())
    return model, twin


def train_beside_cpu_twin(model, twin, rank, world, steps):
    """SGD steps of `model` on this rank's batch, and of `twin` on the CPU
    with every rank's batch together (what data parallelism must equal)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    twin_optimizer = torch.optim.SGD(twin.parameters(), lr=0.1)
    for step in range(steps):
        batches = [torch.randn(5, 8, generator=torch.Generator().manual_seed(100 * step + r))
                   for r in range(world)]
        targets = [torch.randn(5, 4, generator=torch.Generator().manual_seed(7 + 100 * step + r))
                   for r in range(world)]
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(batches[rank].to("neuron")),
                                     targets[rank].to("neuron")).backward()
        optimizer.step()
        twin_optimizer.zero_grad()
        torch.nn.functional.mse_loss(twin(torch.cat(batches)), torch.cat(targets)).backward()
        twin_optimizer.step()


def case_ddp(rank, world):
    """DDP on neuron matches training the same model on the CPU with the
    ranks' batches together, and leaves every replica identical."""
    model, reference = mlp_and_cpu_twin()
    ddp = torch.nn.parallel.DistributedDataParallel(model.to("neuron"))
    train_beside_cpu_twin(ddp, reference, rank, world, steps=4)
    for name, parameter in ddp.module.named_parameters():
        replicas = [torch.empty_like(parameter) for _ in range(world)]
        dist.all_gather(replicas, parameter.detach())
        for r in range(1, world):
            assert torch.equal(replicas[r].cpu(), replicas[0].cpu()), f"{name} differs on rank {r}"
        expected = dict(reference.named_parameters())[name]
        assert torch.allclose(parameter.detach().cpu(), expected.detach(), atol=1e-5), name


def case_dead_rank(rank, world):
    """A rank that dies leaves its peers' collective failing with an error
    that names it, instead of a hang."""
    tensor = torch.ones(4, device="neuron")
    dist.all_reduce(tensor)
    torch.neuron.synchronize()
    if rank == 1:
        os._exit(0)
    started = time.monotonic()
    try:
        dist.all_reduce(tensor)
        torch.neuron.synchronize()
    except RuntimeError as error:
        assert "rank 1" in str(error) and "left" in str(error), error
        assert time.monotonic() - started < 60
        os._exit(0)
    raise AssertionError("the collective with a dead peer did not fail")


def case_dead_rank_async(rank, world):
    """The same with async_op=True: the collective runs on the group's
    communication stream and the caller's stream waits on it; the error the
    caller's stream reports still names the rank that left."""
    tensor = torch.ones(4, device="neuron")
    dist.all_reduce(tensor)
    torch.neuron.synchronize()
    if rank == 1:
        os._exit(0)
    try:
        dist.all_reduce(tensor, async_op=True).wait()
        torch.neuron.synchronize()
    except RuntimeError as error:
        assert "rank 1" in str(error) and "left" in str(error), error
        os._exit(0)
    raise AssertionError("the async collective with a dead peer did not fail")


def case_cpu_only(rank, world):
    """Programs that use only the CPU keep working with torch_neuronx
    installed."""
    from torch.distributed.device_mesh import init_device_mesh

    dist.destroy_process_group()
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (world,))
    tensor = torch.ones(2)
    dist.all_reduce(tensor, group=mesh.get_group())
    assert tensor.tolist() == [float(world)] * 2
    dist.destroy_process_group()
    # No backend named: the accelerator's, as on CUDA (where it is nccl).
    dist.init_process_group(rank=rank, world_size=world)
    on_neuron = torch.ones(2, device="neuron")
    dist.all_reduce(on_neuron)
    assert on_neuron.cpu().tolist() == [float(world)] * 2


def case_device_mesh(rank, world):
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("neuron", (world,))
    tensor = torch.full((2,), float(rank), device="neuron")
    dist.all_reduce(tensor, group=mesh.get_group())
    assert tensor.cpu().tolist() == [float(sum(range(world)))] * 2
    sub = dist.new_group([0, 1])
    tensor = torch.ones(1, device="neuron")
    dist.all_reduce(tensor, group=sub)
    assert tensor.item() == (2.0 if rank < 2 else 1.0)
    if world == 4:
        # 2-D: across the hosts (ranks 0,2 and 1,3 when each host has two)
        # and within them.
        mesh_2d = init_device_mesh("neuron", (2, 2), mesh_dim_names=("outer", "inner"))
        for dim in ("outer", "inner"):
            group = mesh_2d.get_group(dim)
            tensor = torch.full((3,), float(rank), device="neuron")
            dist.all_reduce(tensor, group=group)
            members = dist.get_process_group_ranks(group)
            assert tensor.cpu().tolist() == [float(sum(members))] * 3, (dim, members)


def case_dtensor(rank, world):
    """DTensor on a neuron mesh: distribute, redistribute, matmul."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    mesh = init_device_mesh("neuron", (world,))
    full = torch.arange(16.0).reshape(4, 4)
    sharded = distribute_tensor(full.to("neuron"), mesh, [Shard(0)])
    replicated = sharded.redistribute(mesh, [Replicate()])
    expect_equal(replicated.to_local(), full, "redistribute Shard(0) -> Replicate")
    expect_equal((sharded @ sharded).full_tensor(), full @ full, "sharded matmul")


def case_fsdp2(rank, world):
    """FSDP2 (fully_shard per layer and at the root) matches training the
    same model on the CPU with the ranks' batches together."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("neuron", (world,))
    model, reference = mlp_and_cpu_twin()
    model.to("neuron")
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    train_beside_cpu_twin(model, reference, rank, world, steps=3)
    for (name, parameter), expected in zip(model.named_parameters(), reference.parameters()):
        full = parameter.full_tensor().cpu()
        assert torch.allclose(full, expected.detach(), atol=1e-5), name


def case_tensor_parallel(rank, world):
    """ColwiseParallel then RowwiseParallel match the unsharded module,
    forward and backward."""
    import copy

    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)

    mesh = init_device_mesh("neuron", (world,))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8))
    reference = copy.deepcopy(model)
    parallelize_module(model.to("neuron"), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
    out = model(x.to("neuron"))
    expected = reference(x)
    expect_equal(out, expected, "tensor-parallel forward")
    out.sum().backward()
    expected.sum().backward()
    for (name, parameter), twin in zip(model.named_parameters(), reference.parameters()):
        expect_equal(parameter.grad.full_tensor(), twin.grad, f"tensor-parallel grad of {name}")


def case_overlap(rank, world):
    """An async collective runs on the rank's communication stream: what the
    current stream does after it does not wait for it (rank 0's stream
    drains while its peers have not even issued the collective), and
    Work.wait() orders the current stream after it."""
    store = dist.distributed_c10d._get_default_store()
    tensor = torch.full((4,), float(rank + 1), device="neuron")
    expected = torch.full((4,), float(sum(range(1, world + 1))))
    if rank == 0:
        work = dist.all_reduce(tensor, async_op=True)
        other = torch.ones(4, device="neuron") * 3
        torch.neuron.current_stream().synchronize()
        assert not work.is_completed()
        expect_equal(other, torch.full((4,), 3.0), "compute beside the collective")
        store.set("overlap_go", "1")
        work.wait()
        expect_equal(tensor * 1, expected, "async all_reduce after wait()")
    else:
        store.wait(["overlap_go"])
        dist.all_reduce(tensor)
        expect_equal(tensor, expected, "all_reduce")
    # The future of an async collective (DDP's communication hooks) holds
    # the result once the stream that waits on it gets there.
    tensor = torch.full((2,), float(rank), device="neuron")
    future = dist.all_reduce(tensor, async_op=True).get_future()
    result = future.wait()[0]
    expect_equal(result * 1, torch.full((2,), float(sum(range(world)))), "future result")


def case_pipeline(rank, world):
    """torch.distributed.pipelining: one stage per rank (GPipe, 4
    microbatches) matches the unsplit model's loss and gradients on the CPU;
    activations and gradients cross between stages as sends and receives."""
    import copy

    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

    torch.manual_seed(0)
    layers = [torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16), torch.nn.ReLU(),
              torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)]
    reference = torch.nn.Sequential(*copy.deepcopy(layers))
    per_stage = -(-len(layers) // world)
    mine = torch.nn.Sequential(*layers[rank * per_stage:(rank + 1) * per_stage]).to("neuron")
    stage = PipelineStage(mine, rank, world, torch.device("neuron"))
    loss_fn = torch.nn.MSELoss()
    schedule = ScheduleGPipe(stage, n_microbatches=4, loss_fn=loss_fn)
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(8, 8, generator=generator)
    y = torch.randn(8, 4, generator=generator)
    losses = []
    if rank == 0:
        schedule.step(x.to("neuron"))
    elif rank == world - 1:
        schedule.step(target=y.to("neuron"), losses=losses)
    else:
        schedule.step()
    expected_losses = [loss_fn(reference(xs), ys) for xs, ys in zip(x.chunk(4), y.chunk(4))]
    # The schedule scales gradients by 1 / microbatches (scale_grads).
    (sum(expected_losses) / 4).backward()
    if rank == world - 1:
        got = torch.stack([loss.detach().cpu() for loss in losses])
        expect_equal(got, torch.stack([loss.detach() for loss in expected_losses]),
                     "pipeline losses")
    twins = list(reference)[rank * per_stage:(rank + 1) * per_stage]
    for module, twin in zip(mine, twins):
        for (name, parameter), expected in zip(module.named_parameters(), twin.parameters()):
            expect_equal(parameter.grad, expected.grad, f"pipeline grad of stage {rank} {name}")


CASES = {name[len("case_"):]: function for name, function in globals().items()
         if name.startswith("case_")}
# Cases that set up their own process groups.
OWN_GROUP = {"cpu_only"}


def run(rank, world, case, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    backend = "gloo" if case in OWN_GROUP else "cpu:gloo,neuron:neuron"
    dist.init_process_group(backend, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=30))
    CASES[case](rank, world)
    if dist.is_initialized():
        dist.destroy_process_group()


def run_across_hosts(addresses, case, ranks_per_host, port):
    """Each address is a host's daemon: RANKS_PER_HOST ranks per host, each
    a process pointed at its host's daemon (as torchrun --nnodes would)."""
    world = len(addresses) * ranks_per_host
    ranks = []
    for rank in range(world):
        env = dict(os.environ, NEURON_RTD_ADDRESS=addresses[rank // ranks_per_host])
        ranks.append(subprocess.Popen(
            [sys.executable, __file__, "--rank", str(rank), case, str(world), str(port)], env=env))
    failed = [rank for rank, process in enumerate(ranks) if process.wait(timeout=600) != 0]
    if failed:
        sys.exit(f"rank(s) {failed} failed")


if __name__ == "__main__":
    if sys.argv[1] == "--hosts":
        run_across_hosts(sys.argv[2].split(","), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1] == "--rank":
        run(int(sys.argv[2]), int(sys.argv[4]), sys.argv[3], int(sys.argv[5]))
    else:
        case, world, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
        mp.spawn(run, args=(world, case, port), nprocs=world)

"""Multi-process cases of test_distributed.py: ``python distributed_cases.py
CASE WORLD PORT`` spawns WORLD ranks that run CASE against the daemon at
$NEURON_RTD_ADDRESS, and exits non-zero when a rank fails;
``python distributed_cases.py --hosts ADDRESS,ADDRESS CASE RANKS_PER_HOST
PORT`` runs CASE with each daemon playing a host."""

import datetime
import os
import subprocess
import sys
import tempfile
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

    # Each group below meets through a store of its own: re-initialising on
    # the case's port, a rank could meet the store of the group before,
    # which another rank has not yet destroyed.
    stores = f"file://{tempfile.gettempdir()}/neuron-cpu-only-{os.getppid()}-" \
        f"{os.environ['MASTER_PORT']}"
    dist.destroy_process_group()
    dist.init_process_group("gloo", rank=rank, world_size=world, init_method=f"{stores}-gloo")
    mesh = init_device_mesh("cpu", (world,))
    tensor = torch.ones(2)
    dist.all_reduce(tensor, group=mesh.get_group())
    assert tensor.tolist() == [float(world)] * 2
    dist.destroy_process_group()
    # No backend named: the accelerator's, as on CUDA (where it is nccl).
    dist.init_process_group(rank=rank, world_size=world, init_method=f"{stores}-default")
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


# DTensor's API and FSDP2 with frozen parameters, on ranks that each use a
# device of their own (test_dtensor_and_frozen_fsdp.py runs these).

def rank_device(rank):
    """Binds the rank to a device of its own, as torchrun's LOCAL_RANK does:
    rank r uses device r % device count."""
    torch.neuron.set_device(rank % torch.neuron.device_count())
    return torch.device("neuron", torch.neuron.current_device())


def seeded(seed, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def case_dtensor_api(rank, world):
    """DTensor's API on a neuron mesh: the mesh itself, the constructor,
    from_local and to_local (autograd through both, uneven shards), the spec
    and properties, and torch.save / torch.load."""
    import ast
    import io
    import tempfile
    import warnings

    from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard
    from torch.distributed.tensor._dtensor_spec import DTensorSpec, TensorMeta
    from torch.testing import assert_close

    device = rank_device(rank)
    assert device.index == rank % torch.neuron.device_count(), device

    # The mesh: every rank, on neuron; its group reduces on the devices; the
    # constructor and init_device_mesh describe the same mesh.
    mesh = init_device_mesh("neuron", (world,))
    assert mesh.device_type == "neuron", mesh.device_type
    assert mesh.mesh.tolist() == list(range(world)) and mesh.size() == world
    assert mesh.get_local_rank() == rank and mesh.get_rank() == rank
    assert DeviceMesh("neuron", list(range(world))) == mesh
    total = torch.full((2,), float(rank + 1), device=device)
    dist.all_reduce(total, group=mesh.get_group())
    assert_close(total.cpu(), torch.full((2,), float(sum(range(1, world + 1)))))

    mine = seeded(10 + rank, 3, 3)
    everyone = [seeded(10 + r, 3, 3) for r in range(world)]

    # The constructor, from a spec: the global shape is the spec's, the
    # local tensor is the one given, and the shards assemble to the whole.
    local = mine.to(device).requires_grad_()
    spec = DTensorSpec(mesh, (Shard(0),), tensor_meta=TensorMeta(
        torch.Size([3 * world, 3]), local.stride(), local.dtype))
    built = DTensor(local, spec, requires_grad=True)
    assert built.shape == (3 * world, 3) and built.placements == (Shard(0),)
    assert built.is_leaf and built.requires_grad
    assert_close(built.to_local().detach().cpu(), mine)
    assert_close(built.full_tensor().detach().cpu(), torch.cat(everyone))
    # A local tensor that requires grad under requires_grad=False warns
    # (the public constructors are meant instead).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DTensor(local, spec, requires_grad=False)
    assert any("To construct" in str(w.message) for w in caught), [str(w.message) for w in caught]

    # Gradients reach the DTensor through to_local: a leaf DTensor's grad is
    # a DTensor of its placements holding this rank's gradient.
    weight = seeded(20 + rank, 3, 3).to(device)
    other = torch.zeros(3, 3, device=device, requires_grad=True)
    ((built * 3).to_local() + other).mul(weight).sum().backward()
    assert isinstance(built.grad, DTensor) and built.grad.placements == (Shard(0),)
    assert_close(built.grad.to_local().cpu(), 3 * weight.cpu())
    assert_close(other.grad.cpu(), weight.cpu())
    # Without autograd, to_local is the local tensor itself.
    with torch.no_grad():
        assert built.to_local() is built._local_tensor

    # from_local: a CPU tensor lands on the rank's device; the global shape
    # follows the placement; full_tensor gathers (Shard), keeps (Replicate)
    # or sums (Partial) the ranks' tensors.
    sharded = DTensor.from_local(mine, mesh, [Shard(0)])
    assert sharded.device.type == "neuron" and sharded.to_local().device == device
    assert sharded.shape == (3 * world, 3) and sharded.stride() == (3, 1)
    assert_close(sharded.to_local().cpu(), mine)
    assert_close(sharded.full_tensor().cpu(), torch.cat(everyone))
    replicated = DTensor.from_local(everyone[0], mesh, [Replicate()])
    assert replicated.shape == (3, 3)
    assert_close(replicated.full_tensor().cpu(), everyone[0])
    partial = DTensor.from_local(mine, mesh, [Partial()])
    assert partial.shape == (3, 3)
    assert_close(partial.full_tensor().cpu(), sum(everyone))
    negative = DTensor.from_local(mine, mesh, [Shard(-1)])
    assert negative.placements[0].dim == 1 and negative.shape == (3, 3 * world)
    assert_close(negative.full_tensor().cpu(), torch.cat(everyone, dim=1))
    # Strides are the global tensor's, also for a permuted local tensor.
    columns = DTensor.from_local(seeded(30 + rank, 8, 4), mesh, [Shard(1)])
    assert columns.stride() == (4 * world, 1), columns.stride()
    permuted = seeded(40 + rank, 8, 4, 8).permute(1, 2, 0)
    assert permuted.stride() == (8, 1, 32)
    permuted_dt = DTensor.from_local(permuted, mesh, [Shard(1)])
    assert permuted_dt.stride() == (8 * world, 1, 32 * world), permuted_dt.stride()
    assert_close(permuted_dt.full_tensor().cpu(),
                 torch.cat([seeded(40 + r, 8, 4, 8).permute(1, 2, 0) for r in range(world)], 1))

    # Autograd through from_local and back out through to_local: the
    # gradient of a non-leaf local tensor is the CPU's.
    source = mine.to(device).requires_grad_()
    from_non_leaf = DTensor.from_local(source * 3, mesh, [Shard(0)])
    assert not from_non_leaf.is_leaf
    out = (from_non_leaf * 2) * from_non_leaf
    assert isinstance(out, DTensor)
    grad_out = seeded(50 + rank, 3, 3)
    out.backward(DTensor.from_local(grad_out, mesh, [Shard(0)]))
    twin = mine.clone().requires_grad_()
    ((twin * 3 * 2) * (twin * 3)).backward(grad_out)
    assert_close(source.grad.cpu(), twin.grad)
    source.grad = None
    extra = torch.zeros(3, 3, device=device, requires_grad=True)
    (DTensor.from_local(source + 8, mesh, [Shard(0)]) * 6).to_local().add(extra).mul(
        grad_out.to(device)).sum().backward()
    assert_close(source.grad.cpu(), 6 * grad_out)

    # Uneven shards: with shape and stride given, the DTensor is the global
    # tensor and gathers to it; either alone is refused.
    whole = seeded(60, world + 1, 2)
    piece = whole.chunk(world)[rank]
    uneven = DTensor.from_local(piece, mesh, [Shard(0)], shape=whole.shape, stride=whole.stride())
    assert uneven.shape == whole.shape and uneven.stride() == whole.stride()
    assert_close(uneven.full_tensor().cpu(), whole)
    for only in ({"shape": whole.shape}, {"stride": whole.stride()}):
        try:
            DTensor.from_local(piece, mesh, [Shard(0)], **only)
        except RuntimeError as error:
            assert "Please pass both shape and stride" in str(error), error
        else:
            raise AssertionError(f"from_local with only {list(only)} was not refused")

    # The spec: placements are the DTensor's own (changing the list passed
    # in does not change them); the spec's hash follows mesh, placements and
    # metadata, not the data.
    placements = [Shard(0)]
    first = DTensor.from_local(mine, mesh, placements)
    placements[0] = Replicate()
    assert first.placements == (Shard(0),) and first.placements is not placements
    second = DTensor.from_local(mine * 2, mesh, [Shard(0)])
    assert hash(first._spec) == hash(second._spec) and first._spec == second._spec
    other_placement = DTensor.from_local(mine, mesh, [Replicate()], run_check=False)
    assert hash(first._spec) != hash(other_placement._spec)

    # Properties.
    assert first.device.type == "neuron" and first.dtype == torch.float32
    assert first.ndim == 2 and first.size(0) == 3 * world and not first.requires_grad
    assert first.device_mesh is mesh

    # Within a mesh's context, from_local and distribute_tensor take it.
    with mesh:
        implicit = DTensor.from_local(mine, placements=[Shard(0)])
        assert implicit.device_mesh == mesh
        assert_close(implicit.redistribute(placements=[Replicate()]).to_local().cpu(),
                     torch.cat(everyone))

    # torch.save / torch.load, with and without weights_only: the same
    # placements, shape and local values, on the rank's device.
    buffer = io.BytesIO()
    torch.save(first, buffer)
    for weights_only in (False, True):
        buffer.seek(0)
        loaded = torch.load(buffer, weights_only=weights_only)
        assert isinstance(loaded, DTensor), type(loaded)
        assert loaded.placements == first.placements and loaded.shape == first.shape
        assert loaded.to_local().device == device, loaded.to_local().device
        assert_close(loaded.to_local().cpu(), mine)
        assert_close(loaded.full_tensor().cpu(), torch.cat(everyone))
    # weights_only loading in a fresh interpreter needs torch.distributed.tensor
    # imported, and says so.
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "dtensor.pt")
        torch.save(first, path)
        for imports, expected in (("", "must be imported to load DTensors"),
                                  ("import torch.distributed.tensor;", None)):
            script = (f"import torch;{imports}"
                      f"t = torch.load({path!r}, weights_only=True);"
                      f"print(type(t).__name__, t.placements, t.to_local().cpu().tolist())")
            result = subprocess.run([sys.executable, "-c", script], capture_output=True,
                                    text=True, timeout=300, check=False)
            if expected is None:
                assert result.returncode == 0, result.stderr
                assert result.stdout.startswith("DTensor (Shard(dim=0),)"), result.stdout
                assert_close(torch.tensor(ast.literal_eval(result.stdout.split(",)", 1)[1].strip())), mine)
            else:
                assert result.returncode != 0 and expected in result.stderr, result.stderr


def case_dtensor_sharding(rank, world):
    """distribute_tensor and local sharding, full_tensor, redistribute
    between Shard, Replicate and Partial (values against the CPU, and the
    collective each transition uses), gradient placement hints, async
    redistribution, meta DTensors and a meta-initialized tensor-parallel
    module."""
    from torch.distributed._functional_collectives import AsyncCollectiveTensor
    from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
    from torch.distributed.tensor._api import _shard_tensor
    from torch.distributed.tensor.debug import CommDebugMode
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)
    from torch.testing import assert_close

    functional = torch.ops.c10d_functional
    device = rank_device(rank)
    mesh = init_device_mesh("neuron", (world,))
    full = seeded(0, 6, 5)  # the same on every rank; 5 columns shard unevenly

    # distribute_tensor: each rank holds its chunk, on its device; the
    # whole gathers back; full_tensor waits for its collective.
    for placement, expected in ((Shard(0), full.chunk(world, 0)[rank]),
                                (Shard(1), full.chunk(world, 1)[rank]),
                                (Replicate(), full)):
        dt = distribute_tensor(full, mesh, [placement])
        assert dt.shape == full.shape and dt.placements == (placement,)
        assert dt.to_local().device == device, dt.to_local().device
        assert_close(dt.to_local().cpu(), expected)
        gathered = dt.full_tensor()
        assert not isinstance(gathered, AsyncCollectiveTensor)
        assert_close(gathered.cpu(), full)
    # The data is rank 0's (it is scattered from there), whatever the others hold.
    dt = distribute_tensor((full + rank).to(device), mesh, [Shard(0)])
    assert_close(dt.to_local().cpu(), full.chunk(world, 0)[rank])
    dt = distribute_tensor((full + rank).to(device), mesh, [Replicate()])
    assert_close(dt.to_local().cpu(), full)

    # Local sharding (no communication): the rank's rows or columns; the
    # tensor sharded is left as it was.
    square = torch.arange(world * world).reshape(world, world)
    with CommDebugMode() as comms:
        rows = _shard_tensor(square, [Shard(0)], mesh)
        columns = _shard_tensor(square, [Shard(1)], mesh)
    assert comms.get_total_counts() == 0, comms.get_comm_counts()
    assert rows.shape == (world, world) and rows.placements == (Shard(0),)
    assert torch.equal(rows.to_local().cpu(), square[rank:rank + 1])
    assert torch.equal(columns.to_local().cpu(), square[:, rank:rank + 1])
    assert torch.equal(square, torch.arange(world * world).reshape(world, world))
    # On a 2-D mesh (world x 1), one element per rank.
    mesh_2d = DeviceMesh("neuron", torch.arange(world).reshape(world, 1))
    both = _shard_tensor(torch.arange(world).reshape(world, 1), [Shard(0), Shard(1)], mesh_2d)
    assert both.placements == (Shard(0), Shard(1)) and both.to_local().item() == rank

    # redistribute, each transition against the CPU and the collective it uses.
    rank_data = [seeded(70 + r, 6, 5) for r in range(world)]
    transitions = [
        ([Shard(0)], [Replicate()], full, full, functional.all_gather_into_tensor),
        ([Shard(1)], [Replicate()], full, full, functional.all_gather_into_tensor),
        ([Replicate()], [Shard(1)], full, full.chunk(world, 1)[rank], None),
        # Between shard dimensions: whichever collective (5 columns split unevenly).
        ([Shard(0)], [Shard(1)], full, full.chunk(world, 1)[rank], "any"),
        ([Partial()], [Replicate()], None, sum(rank_data), functional.all_reduce),
        ([Partial()], [Shard(0)], None, sum(rank_data).chunk(world, 0)[rank],
         functional.reduce_scatter_tensor),
    ]
    for source, target, whole, expected, collective in transitions:
        if whole is None:
            dt = DTensor.from_local(rank_data[rank], mesh, source)
        else:
            dt = distribute_tensor(whole, mesh, source)
        with CommDebugMode() as comms:
            moved = dt.redistribute(mesh, target)
            local = moved.to_local().cpu()
        what = f"{source} -> {target}"
        assert moved.placements == tuple(target), what
        assert_close(local, expected, msg=what)
        counts = comms.get_comm_counts()
        if collective is None:
            assert comms.get_total_counts() == 0, (what, counts)
        elif collective == "any":
            assert comms.get_total_counts() >= 1, (what, counts)
        else:
            assert counts.get(collective, 0) >= 1, (what, counts)

    # Async redistribution: the local tensor is an AsyncCollectiveTensor not
    # yet waited for (views of it too); using it waits and gives the data.
    dt = distribute_tensor(full, mesh, [Shard(0)])
    pending = dt.redistribute(mesh, [Replicate()], async_op=True)
    pending = pending.view(pending.shape).to_local()
    assert type(pending) is AsyncCollectiveTensor and not pending.completed
    flat = pending.view(-1)
    assert type(flat) is AsyncCollectiveTensor and not pending.completed
    used = flat + 1
    assert type(used) is torch.Tensor
    assert_close(used.cpu(), full.reshape(-1) + 1)
    waited = dt.redistribute(mesh, [Replicate()])
    assert not isinstance(waited.to_local(), AsyncCollectiveTensor)
    assert_close(waited.to_local().cpu(), full)

    # Gradient placement hints. Replicated then made local, the gradient is
    # taken as that placement unless told otherwise: each rank keeps its own
    # gradient's rows and nothing is reduced.
    grads = [seeded(80 + r, 6, 5) for r in range(world)]
    sharded = distribute_tensor(full, mesh, [Shard(0)]).requires_grad_()
    sharded.redistribute(mesh, [Replicate()]).to_local().backward(grads[rank].to(device))
    assert_close(sharded.grad.to_local().cpu(), grads[rank].chunk(world)[rank])
    # Told the gradient is Partial, backward reduce-scatters: the sharded
    # tensor's gradient is the sum of the ranks' gradients.
    sharded.grad = None
    with CommDebugMode() as comms:
        local = sharded.redistribute(mesh, [Replicate()]).to_local(grad_placements=[Partial()])
        local.backward(grads[rank].to(device))
    counts = comms.get_comm_counts()
    assert counts.get(functional.all_gather_into_tensor) == 1, counts
    assert counts.get(functional.reduce_scatter_tensor) == 1, counts
    assert_close(sharded.grad.full_tensor().cpu(), sum(grads))
    # The same through full_tensor's hint.
    sharded.grad = None
    whole = sharded.full_tensor(grad_placements=[Partial()])
    (whole * grads[rank].to(device)).sum().backward()
    assert_close(sharded.grad.full_tensor().cpu(), sum(grads))

    # new_empty_strided on a DTensor: a DTensor of the global shape through
    # which autograd runs.
    fresh = dt.new_empty_strided((6, 5), (5, 1), requires_grad=True)
    assert isinstance(fresh, DTensor) and fresh.shape == (6, 5)
    fresh.sum().backward()
    assert isinstance(fresh.grad, DTensor)
    assert_close(fresh.grad.full_tensor().cpu(), torch.ones(6, 5))

    # Meta DTensors stay meta until materialized on the device.
    on_meta = torch.empty(8, 6, device="meta")
    for placements in ([Shard(0)], [Replicate()]):
        for meta_dt in (distribute_tensor(on_meta, mesh, placements),
                        DTensor.from_local(on_meta, mesh, placements)):
            assert meta_dt.is_meta and meta_dt.placements == tuple(placements)
            real = torch.empty_like(meta_dt, device="neuron")
            assert not real.is_meta and real.to_local().device == device
            torch.nn.init.constant_(real, 1.25)
            assert_close(real.to_local().cpu(), torch.full(real.to_local().shape, 1.25))
            assert_close(real.full_tensor().cpu(), torch.full(real.shape, 1.25))

    # A module built on meta, parallelized (columns then rows), materialized
    # on the devices and given the CPU module's values trains as it does.
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(5, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(5, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    assert all(p.is_meta for p in model.parameters())
    model.to_empty(device="neuron")
    with torch.no_grad():
        for parameter, twin in zip(model.parameters(), reference.parameters()):
            parameter.copy_(distribute_tensor(twin.detach(), mesh, parameter.placements))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(2):
        x = seeded(90 + step, 20, 5)
        out = model(x.to(device))
        expected = reference(x)
        assert_close(out.cpu(), expected, atol=1e-5, rtol=1e-5)
        out.sum().backward()
        expected.sum().backward()
        optimizer.step()
        reference_optimizer.step()
        optimizer.zero_grad()
        reference_optimizer.zero_grad()
    for (name, parameter), twin in zip(model.named_parameters(), reference.parameters()):
        assert_close(parameter.full_tensor().cpu(), twin.detach(), atol=1e-5, rtol=1e-5,
                     msg=name)


# Large enough that every trained parameter moves well beyond the tolerance
# of the comparison with the reference (check_fsdp_against_reference).
FSDP_LR = 0.5


def rank_batches(step, world, rows, columns):
    return [seeded(1000 * step + r, rows, columns) for r in range(world)]


class ReduceScatterLog:
    """Records FSDP2's gradient reduce-scatters (their per-rank output
    numel) and whether each ran inside the autograd backward (as a group's
    gradients became ready) or after it."""

    def __init__(self):
        self.calls = []
        self.original = dist.reduce_scatter_single

    def __enter__(self):
        def logged(output, input, *args, **kwargs):
            self.calls.append((output.numel(), torch._C._current_autograd_node() is not None))
            return self.original(output, input, *args, **kwargs)

        dist.reduce_scatter_single = logged
        return self

    def __exit__(self, *exc):
        dist.reduce_scatter_single = self.original

    def take(self):
        calls, self.calls = self.calls, []
        return calls


def check_fsdp_against_reference(model, reference, frozen_at_start, what, trained):
    """Every parameter equals the CPU reference's; those never trained are
    bit for bit what they were at the start, the others have moved."""
    from torch.testing import assert_close

    for (name, parameter), (_, twin) in zip(model.named_parameters(),
                                            reference.named_parameters()):
        full = parameter.full_tensor().detach().cpu()
        if name not in trained:
            assert torch.equal(full, frozen_at_start[name]), f"{what}: frozen {name} changed"
        else:
            assert (full - frozen_at_start[name]).abs().max() > 5e-4, f"{what}: {name} not trained"
        assert_close(full, twin.detach(), atol=1e-5, rtol=1e-5, msg=f"{what}: {name}")


def fsdp_step(model, reference, optimizer, reference_optimizer, x, target, rank, world, what,
              set_to_none):
    """One training step of the FSDP2 model on this rank's batch and of the
    CPU reference on every rank's batch together; checks the loss and that
    gradients exist for exactly the parameters that require grad, equal to
    the reference's."""
    from torch.distributed.tensor import DTensor, Shard
    from torch.testing import assert_close

    optimizer.zero_grad(set_to_none=set_to_none)
    reference_optimizer.zero_grad(set_to_none=set_to_none)
    loss = torch.nn.functional.mse_loss(model(x[rank].to("neuron")), target[rank].to("neuron"))
    loss.backward()
    expected = torch.nn.functional.mse_loss(reference(torch.cat(x)), torch.cat(target))
    expected.backward()
    mean = loss.detach().clone()
    dist.all_reduce(mean, op=dist.ReduceOp.AVG)
    assert_close(mean.cpu(), expected.detach(), atol=1e-6, rtol=1e-5, msg=f"{what}: loss")
    for (name, parameter), (_, twin) in zip(model.named_parameters(),
                                            reference.named_parameters()):
        if not parameter.requires_grad:
            assert parameter.grad is None or not parameter.grad.to_local().any(), \
                f"{what}: frozen {name} has a gradient"
            continue
        assert isinstance(parameter.grad, DTensor), f"{what}: {name} has no gradient"
        assert parameter.grad.placements == (Shard(0),), parameter.grad.placements
        assert_close(parameter.grad.full_tensor().cpu(), twin.grad, atol=1e-6, rtol=1e-4,
                     msg=f"{what}: gradient of {name}")
    optimizer.step()
    reference_optimizer.step()


def case_fsdp2_frozen_within_groups(rank, world):
    """FSDP2 with frozen and trainable parameters in the same communication
    group (train the biases only, as BitFit does), each block its own
    group: training matches the CPU reference, frozen parameters stay as
    they were and get no gradient, each reduce-scatter carries the
    trainable parameters alone and runs during the backward. With and
    without resharding after forward and activation checkpointing, frozen
    before or after fully_shard."""
    import copy
    import itertools

    from torch.distributed._composable import checkpoint
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    rank_device(rank)
    mesh = init_device_mesh("neuron", (world,))
    blocks, dim = 3, 16
    for reshard, checkpointed, freeze_late in itertools.product((True, False), (False, True),
                                                                (False, True)):
        what = f"reshard_after_forward={reshard} checkpoint={checkpointed} " \
               f"frozen {'after' if freeze_late else 'before'} fully_shard"
        torch.manual_seed(0)
        model = torch.nn.Sequential(*[
            torch.nn.Sequential(torch.nn.Linear(dim, 2 * dim), torch.nn.ReLU(),
                                torch.nn.Linear(2 * dim, dim), torch.nn.ReLU())
            for _ in range(blocks)])
        reference = copy.deepcopy(model)
        at_start = {name: p.detach().clone() for name, p in model.named_parameters()}

        def freeze(module):
            for name, parameter in module.named_parameters():
                if "bias" not in name:
                    parameter.requires_grad_(False)

        freeze(reference)
        if not freeze_late:
            freeze(model)
        for block in model:
            if checkpointed:
                checkpoint(block)
            fully_shard(block, mesh=mesh, reshard_after_forward=reshard)
        fully_shard(model, mesh=mesh, reshard_after_forward=reshard)
        optimizer = torch.optim.SGD(model.parameters(), lr=FSDP_LR, momentum=0.9)
        if freeze_late:
            freeze(model)
        reference_optimizer = torch.optim.SGD(reference.parameters(), lr=FSDP_LR, momentum=0.9)
        trained = {name for name, p in model.named_parameters() if p.requires_grad}
        assert trained and len(trained) < len(at_start), trained
        per_block = sum(p.to_local().numel() for p in model[0].parameters() if p.requires_grad)
        with ReduceScatterLog() as log:
            for step in range(4):
                x = rank_batches(step, world, 4, dim)
                target = rank_batches(step + 500, world, 4, dim)
                fsdp_step(model, reference, optimizer, reference_optimizer, x, target, rank,
                          world, f"{what} step {step}", set_to_none=step % 2 == 0)
                calls = log.take()
                # One reduce-scatter per block, of its trainable parameters;
                # all but perhaps the first block's (its input does not
                # require grad) inside the backward.
                assert [numel for numel, _ in calls] == [per_block] * blocks, (what, calls)
                assert sum(inside for _, inside in calls) >= blocks - 1, (what, calls)
        check_fsdp_against_reference(model, reference, at_start, what, trained)


def case_fsdp2_frozen_across_groups(rank, world):
    """FSDP2 with whole groups frozen: six linear layers, each its own
    group, every other one frozen. Training matches the CPU reference; a
    step under no_grad changes nothing; frozen groups reduce nothing and
    stay as they were; unfreezing them on the last step trains them too.
    Then a module that runs a trainable and a frozen layer several times
    in one forward, some of the calls under no_grad."""
    import copy

    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import FSDPModule, fully_shard
    from torch.distributed.tensor import DTensor
    from torch.testing import assert_close

    rank_device(rank)
    mesh = init_device_mesh("neuron", (world,))
    dim, layers = 16, 6
    for reshard in (True, False):
        what = f"across groups, reshard_after_forward={reshard}"
        torch.manual_seed(0)
        model = torch.nn.Sequential(*[module for _ in range(layers)
                                      for module in (torch.nn.Linear(dim, dim), torch.nn.ReLU())])
        reference = copy.deepcopy(model)
        at_start = {name: p.detach().clone() for name, p in model.named_parameters()}
        frozen_layers = [model[2 * i] for i in range(0, layers, 2)]
        reference_frozen = [reference[2 * i] for i in range(0, layers, 2)]
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer, mesh=mesh, reshard_after_forward=reshard)
        fully_shard(model, mesh=mesh, reshard_after_forward=reshard)
        for layer in frozen_layers + reference_frozen:
            layer.requires_grad_(False)
        optimizer = torch.optim.SGD(model.parameters(), lr=FSDP_LR, momentum=0.9)
        reference_optimizer = torch.optim.SGD(reference.parameters(), lr=FSDP_LR, momentum=0.9)
        per_layer = sum(p.to_local().numel() for p in model[0].parameters())
        with ReduceScatterLog() as log:
            for step in range(4):
                x = rank_batches(step, world, 4, dim)
                target = rank_batches(step + 500, world, 4, dim)
                if step == 1:
                    before = {n: p.full_tensor().cpu() for n, p in model.named_parameters()}
                    with torch.no_grad():
                        out = model(x[rank].to("neuron"))
                    assert_close(out.cpu(), reference(x[rank]).detach(), atol=1e-5, rtol=1e-5,
                                 msg=f"{what}: no_grad forward")
                    # Resharded after forward, or (reshard_after_forward=False)
                    # left unsharded until reshard(): the same values either way.
                    for name, parameter in model.named_parameters():
                        assert isinstance(parameter, DTensor) == reshard, (what, name)
                        unsharded = parameter.full_tensor() if reshard else parameter
                        assert torch.equal(unsharded.detach().cpu(), before[name]), (what, name)
                    for module in model.modules():
                        if isinstance(module, FSDPModule):
                            module.reshard()
                    for name, parameter in model.named_parameters():
                        assert isinstance(parameter, DTensor), (what, name)
                        assert torch.equal(parameter.full_tensor().cpu(), before[name]), name
                    assert log.take() == [], what
                    continue
                if step == 3:
                    for layer in frozen_layers + reference_frozen:
                        layer.requires_grad_(True)
                fsdp_step(model, reference, optimizer, reference_optimizer, x, target, rank,
                          world, f"{what} step {step}", set_to_none=step % 2 == 0)
                calls = log.take()
                trainable = layers if step == 3 else layers // 2
                assert [numel for numel, _ in calls] == [per_layer] * trainable, (what, calls)
                assert sum(inside for _, inside in calls) >= trainable - 1, (what, calls)
                if step == 2:
                    trainable_so_far = {n for n, p in model.named_parameters()
                                        if p.requires_grad}
                    check_fsdp_against_reference(model, reference, at_start, what,
                                                 trained=trainable_so_far)
        check_fsdp_against_reference(model, reference, at_start, what,
                                     trained={n for n, _ in model.named_parameters()})

    class Repeated(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = torch.nn.Linear(5, 5)
            self.frozen = torch.nn.Linear(5, 5)
            self.trained = torch.nn.Linear(5, 5)
            self.frozen.requires_grad_(False)

        def forward(self, x):
            x = self.first(x)
            for _ in range(3):
                x = self.frozen(torch.relu(self.trained(x)))
                with torch.no_grad():
                    x += torch.relu(self.trained(x))
            return x

    for reshard in (True, False):
        what = f"repeated layers, reshard_after_forward={reshard}"
        torch.manual_seed(0)
        model = Repeated()
        reference = copy.deepcopy(model)
        at_start = {name: p.detach().clone() for name, p in model.named_parameters()}
        for layer in (model.first, model.frozen, model.trained):
            fully_shard(layer, mesh=mesh, reshard_after_forward=reshard)
        fully_shard(model, mesh=mesh, reshard_after_forward=reshard)
        optimizer = torch.optim.SGD(model.parameters(), lr=FSDP_LR, momentum=0.9)
        reference_optimizer = torch.optim.SGD(reference.parameters(), lr=FSDP_LR, momentum=0.9)
        for step in range(4):
            fsdp_step(model, reference, optimizer, reference_optimizer,
                      rank_batches(step, world, 4, 5), rank_batches(step + 500, world, 4, 5),
                      rank, world, f"{what} step {step}", set_to_none=step % 2 == 0)
        check_fsdp_against_reference(model, reference, at_start, what,
                                     trained={n for n, p in model.named_parameters()
                                              if p.requires_grad})


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

"""TorchTitan trains its Llama on `neuron` unchanged, as on the CPU.

The user's command (`torchrun -m torchtitan.train --job.config_file ...`,
no code of ours in between: PyTorch autoloads torch_neuronx and TorchTitan
picks the `neuron` device and its c10d backend by itself) against TorchTitan
on the CPU, both from one seed checkpoint: every step's loss within 1e-3
relative and its gradient norm within 1e-2 (TorchTitan prints 4 digits).
Eager on one process, compiled with `--compile.backend neuron`, and over
two processes with DDP and FSDP2. See docs/torchtitan.md.
"""

import pytest

pytest.importorskip("torchtitan")
pytest.importorskip("tokenizers")

import titan_job  # noqa: E402

STEPS = ("--training.steps", "4")
# Two ranks of one sample each: the global batch of the one-process job.
ONE_SAMPLE = ("--training.local_batch_size", "1")
DDP = ("--parallelism.data_parallel_replicate_degree", "2",
       "--parallelism.data_parallel_shard_degree", "1")


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    job_dir = tmp_path_factory.mktemp("torchtitan")
    titan_job.build_assets(job_dir)
    return job_dir, titan_job.create_seed_checkpoint(job_dir)


@pytest.fixture(scope="module")
def on_cpu(job):
    return titan_job.train(*job, "cpu", *STEPS)[1]


def assert_same_steps(steps, reference, norms=True, learns=True):
    assert [step for step, *_ in steps] == [step for step, *_ in reference]
    assert len(steps) == int(STEPS[1])
    for (step, loss, norm, _), (_, reference_loss, reference_norm, _) in zip(steps, reference):
        assert loss == pytest.approx(reference_loss, rel=1e-3), f"step {step}"
        if norms:
            assert norm == pytest.approx(reference_norm, rel=1e-2, abs=1e-3), f"step {step}"
    if learns:
        assert steps[-1][1] < steps[0][1], "the loss did not fall"


def test_llama3_debug_model_trains_on_neuron_as_on_cpu(job, on_cpu):
    log, on_neuron = titan_job.train(*job, "neuron", *STEPS)
    assert "NEURON capacity: trn2" in log, "TorchTitan did not choose the neuron device"
    assert_same_steps(on_neuron, on_cpu)


def test_compiled_with_the_neuron_backend_as_cpu_eager(job, on_cpu):
    # With TorchTitan's selective activation checkpointing, as configured.
    log, compiled = titan_job.train(*job, "neuron", *STEPS, "--compile.enable",
                                    "--compile.backend", "neuron")
    assert "torch_neuronx._dynamo" in log, "nothing was compiled by the neuron backend"
    assert_same_steps(compiled, on_cpu)


def test_ddp_and_fsdp2_over_two_processes_as_ddp_on_cpu(job):
    # Gloo has no PREMUL_SUM, which FSDP2 reduces with: the CPU twin runs
    # DDP. TorchTitan's DDP and FSDP2 differ in gradient scale (DDP's norm
    # is half FSDP2's here; AdamW does not see the scale), so FSDP2 is held
    # to the losses only.
    _, cpu_ddp = titan_job.train(*job, "cpu", *STEPS, *ONE_SAMPLE, *DDP, ranks=2)
    _, neuron_ddp = titan_job.train(*job, "neuron", *STEPS, *ONE_SAMPLE, *DDP, ranks=2)
    _, neuron_fsdp = titan_job.train(*job, "neuron", *STEPS, *ONE_SAMPLE, ranks=2)
    # One sample per rank for four steps: the loss follows the samples drawn
    # more than the learning (8.043 -> 8.064 on both twins in some runs), so
    # only the twins' equality is asserted here; the one-process tests check
    # that the loss falls.
    assert_same_steps(neuron_ddp, cpu_ddp, learns=False)
    assert_same_steps(neuron_fsdp, cpu_ddp, norms=False, learns=False)


def test_memory_snapshots_for_pytorchs_visualiser(job):
    import pickle

    from torch.cuda import _memory_viz

    job_dir, seed = job
    titan_job.train(job_dir, seed, "neuron", "--training.steps", "2",
                    "--profiling.enable_memory_snapshot", "--profiling.profile_freq", "2")
    path = job_dir / "outputs" / "memory_snapshot" / "iteration_2" / "rank0_memory_snapshot.pickle"
    with open(path, "rb") as file:
        snapshot = pickle.load(file)
    assert "total_allocated" in _memory_viz.segsum(snapshot)
    files = {frame["filename"] for entry in snapshot["device_traces"][0]
             for frame in entry["frames"]}
    assert any("torchtitan/models/llama3" in name for name in files)

"""DTensor's API and FSDP2 (fully_shard) with frozen parameters on the
neuron device and the `neuron` c10d backend, two ranks, each a process on a
device of its own and a session of the test daemon. The ranks run cases of
distributed_cases.py and check their results against the CPU: a single
process computing the same thing, or the data the shards were cut from."""

from test_distributed import run_case


def test_dtensor_mesh_constructor_local_conversions_spec_and_save_load():
    """The neuron mesh; DTensor's constructor; from_local / to_local with
    Shard, Replicate and Partial, strides, autograd through both, uneven
    shards; the spec's placements and hash; properties; torch.save and
    torch.load (also weights_only in a fresh interpreter)."""
    run_case("dtensor_api")


def test_dtensor_distribute_redistribute_grad_hints_and_meta():
    """distribute_tensor and local sharding; full_tensor; every redistribute
    between Shard, Replicate and Partial with the collective it uses;
    gradient placement hints of to_local and full_tensor; async
    redistribution; meta DTensors; a tensor-parallel module initialized on
    meta against the CPU module."""
    run_case("dtensor_sharding")


def test_fsdp2_frozen_and_trainable_parameters_in_one_group():
    """Biases trained, weights frozen, in the same FSDP2 groups: matches the
    CPU reference; frozen parameters unchanged and without gradients;
    reduce-scatters of the trainable parameters only, during the backward
    (resharding, activation checkpointing, freezing before or after
    fully_shard)."""
    run_case("fsdp2_frozen_within_groups")


def test_fsdp2_frozen_groups_no_grad_steps_unfreezing_and_repeated_layers():
    """Whole FSDP2 groups frozen: matches the CPU reference; frozen groups
    reduce nothing and stay unchanged; a no_grad step changes nothing;
    unfrozen groups train; layers called several times per forward."""
    run_case("fsdp2_frozen_across_groups")

"""Calls whose lists hold more tensors than one launch carries (192).

Per-element operators (foreach, fused optimizers) and concatenations are
split into several launches, with the CPU's results.
"""

import pytest
import torch
import torch.nn as nn
import torch_neuronx  # noqa: F401

MORE_THAN_ONE_LAUNCH = 400


def on_device(tensors):
    return [t.to("neuron") for t in tensors]


@pytest.mark.parametrize("count", [191, 193, MORE_THAN_ONE_LAUNCH])
def test_cat_of_many_tensors_matches_cpu(count):
    parts = [torch.arange(4.0) + i for i in range(count)]
    torch.testing.assert_close(torch.cat(on_device(parts)).cpu(), torch.cat(parts))


def test_cat_of_many_tensors_promotes_and_concatenates_along_dim_as_cpu():
    parts = [torch.full((2, 1), i, dtype=torch.int32) for i in range(MORE_THAN_ONE_LAUNCH)]
    parts[-1] = parts[-1].float()
    result = torch.cat(on_device(parts), dim=1)
    assert result.dtype == torch.float32
    torch.testing.assert_close(result.cpu(), torch.cat(parts, dim=1))


def test_cat_out_of_many_tensors_resizes_out():
    parts = [torch.randn(3) for _ in range(MORE_THAN_ONE_LAUNCH)]
    out = torch.empty(0, device="neuron")
    returned = torch.cat(on_device(parts), out=out)
    assert returned.data_ptr() == out.data_ptr()
    torch.testing.assert_close(out.cpu(), torch.cat(parts))


@pytest.mark.parametrize("dim", [0, -1])
def test_stack_of_many_tensors_matches_cpu(dim):
    parts = [torch.randn(2, 3) for _ in range(MORE_THAN_ONE_LAUNCH)]
    torch.testing.assert_close(torch.stack(on_device(parts), dim=dim).cpu(),
                               torch.stack(parts, dim=dim))


def test_clip_grad_norm_of_many_parameters_matches_cpu():
    # _foreach_norm, then stack of every norm: both past one launch.
    grads = [torch.randn(3) for _ in range(240)]
    results = {}
    for device in ("cpu", "neuron"):
        params = [nn.Parameter(torch.zeros(3, device=device)) for _ in grads]
        for param, grad in zip(params, grads):
            param.grad = grad.clone().to(device)
        total = nn.utils.clip_grad_norm_(params, 1.0)
        results[device] = (total.cpu(), [p.grad.cpu() for p in params])
    torch.testing.assert_close(results["neuron"][0], results["cpu"][0])
    torch.testing.assert_close(results["neuron"][1], results["cpu"][1])


@pytest.mark.parametrize("count", [129, 300])
def test_adam_over_many_parameters_matches_cpu(count):
    # Its per-parameter step sizes are a list of Python floats: past 128
    # parameters their bytes exceed a launch before its tensors do.
    torch.manual_seed(0)
    initial = [torch.randn(3) for _ in range(count)]
    trained = {}
    for device in ("cpu", "neuron"):
        params = [nn.Parameter(p.clone().to(device)) for p in initial]
        optimizer = torch.optim.Adam(params, lr=0.1, foreach=True)
        for step in range(2):
            for i, param in enumerate(params):
                param.grad = torch.full((3,), float(i + step), device=device)
            optimizer.step()
        trained[device] = [p.detach().cpu() for p in params]
    torch.testing.assert_close(trained["neuron"], trained["cpu"])


def test_foreach_with_a_scalar_list_past_one_launch_matches_cpu():
    tensors = [torch.randn(2) for _ in range(MORE_THAN_ONE_LAUNCH)]
    scalars = [float(i) for i in range(MORE_THAN_ONE_LAUNCH)]
    result = torch._foreach_add(on_device(tensors), scalars)
    torch.testing.assert_close([r.cpu() for r in result], torch._foreach_add(tensors, scalars))

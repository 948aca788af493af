"""Complex tensors on neuron, against the CPU: complex32, complex64 and
complex128 keep their dtypes, views between complex and real dtypes are
metadata only, and gradients flow through complex operators."""

import pytest
import torch

import torch_neuronx  # noqa: F401


def real(n, seed=0):
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


CASES = {
    "fft": lambda x: torch.fft.fft(x),
    "ifft": lambda x: torch.fft.ifft(x),
    "rfft": lambda x: torch.fft.rfft(x),
    "irfft": lambda x: torch.fft.irfft(torch.fft.rfft(x)),
    "fft2": lambda x: torch.fft.fft2(x.reshape(4, 4)),
    "rfftn": lambda x: torch.fft.rfftn(x.reshape(2, 2, 4)),
    "abs": lambda x: torch.fft.fft(x).abs(),
    "angle": lambda x: torch.fft.fft(x).angle(),
    "polar": lambda x: torch.polar(x.abs(), x),
    "mul_conj": lambda x: torch.fft.fft(x) * torch.fft.fft(x).conj(),
    "sum": lambda x: torch.fft.fft(x).sum(),
    "view_as_real": lambda x: torch.view_as_real(torch.fft.fft(x)),
    "view_as_complex": lambda x: torch.view_as_complex(x.reshape(8, 2)[2:]),
    "matmul": lambda x: (torch.view_as_complex(x.reshape(8, 2)).reshape(2, 4)
                         @ torch.view_as_complex(x.reshape(8, 2)).reshape(4, 2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_operators_match_the_cpu(name):
    x = real(16)
    expected = CASES[name](x)
    actual = CASES[name](x.to("neuron"))
    assert actual.device.type == "neuron"
    assert actual.dtype == expected.dtype
    torch.testing.assert_close(actual.cpu(), expected, rtol=1e-5, atol=1e-5)


def test_gradients_flow_through_complex_operators():
    x = real(16).requires_grad_()
    xd = real(16).to("neuron").requires_grad_()
    for t in (x, xd):
        spectrum = torch.fft.rfft(t)
        (spectrum.abs() ** 2 + torch.view_as_real(spectrum).sum()).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), x.grad, rtol=1e-4, atol=1e-4)


def test_linalg_eig_runs_on_the_device():
    m = torch.randn(4, 4, generator=torch.Generator().manual_seed(1))
    values, vectors = torch.linalg.eig(m.to("neuron"))
    assert values.dtype == torch.complex64
    expected = torch.linalg.eigvals(m)
    torch.testing.assert_close(values.cpu().abs().sort().values, expected.abs().sort().values,
                               rtol=1e-4, atol=1e-4)


def test_complex128_and_complex32_keep_their_dtypes():
    z = torch.randn(8, dtype=torch.complex128)
    on_device = z.to("neuron")
    assert on_device.dtype == torch.complex128
    assert torch.equal(on_device.cpu(), z)
    assert torch.equal((on_device * on_device.conj()).cpu(), z * z.conj())
    half = z.to(torch.complex32)
    on_device = half.to("neuron")
    assert on_device.dtype == torch.complex32
    assert torch.equal(torch.view_as_real(on_device).cpu(), torch.view_as_real(half))
    assert on_device.cpu().dtype == torch.complex32


def test_lazily_conjugated_and_negated_tensors_copy_as_their_values():
    # conj() and _neg_view() only set a bit over unchanged data. A copy of
    # such a tensor once recursed without end (PyTorch's fallback
    # materializes it with a clone, whose copy came back to the copy) and
    # crashed the process; conj_physical_ had no neuron kernel.
    z = torch.randn(8, dtype=torch.complex64, generator=torch.Generator().manual_seed(2))
    zd = z.to("neuron")
    conjugated = z.conj().resolve_conj()
    assert torch.equal(zd.conj().clone().cpu(), conjugated)
    assert torch.equal(zd.conj().cpu(), conjugated)
    assert torch.equal(z.conj().to("neuron").cpu(), conjugated)
    into = torch.empty_like(zd)
    into.copy_(zd.conj())
    assert torch.equal(into.cpu(), conjugated)
    in_place = zd.clone()
    in_place.conj_physical_()
    assert torch.equal(in_place.cpu(), conjugated)
    assert torch.equal(torch._neg_view(zd).clone().cpu(), -z)


@pytest.mark.parametrize("write", [
    lambda t: t.conj().copy_(torch.arange(8.0).to(t.device) * (1 + 2j)),
    lambda t: t.conj().add_(1j),
    lambda t: t.conj().mul_(2),
    lambda t: t.conj().zero_(),
    lambda t: torch._neg_view(t.real).add_(1.0),
    lambda t: torch._neg_view(t).copy_(t.conj()),
], ids=["conj_copy", "conj_add", "conj_mul", "conj_zero", "neg_add", "neg_copy_of_conj"])
def test_writes_through_conjugated_and_negated_views_as_the_cpu(write):
    z = torch.complex(torch.arange(8.0), torch.arange(8.0) + 10)
    expected, actual = z.clone(), z.to("neuron")
    write(expected)
    write(actual)
    assert torch.equal(actual.cpu(), expected)


@pytest.mark.parametrize("op", [
    lambda z: z + 1j,
    lambda z: z * (2 - 3j),
    lambda z: z.clone().add_(z, alpha=1j),
    lambda z: z.clone().fill_(1 + 2j),
    lambda z: torch.full((3,), 1j, device=z.device),
    lambda z: torch.where(z.real > 2, z, 1j),
    lambda z: z.clone().index_fill_(0, torch.tensor([1, 3], device=z.device), 2j),
    lambda z: torch._foreach_add([z, z * 2], [1j, 2 - 1j])[1],
], ids=["add", "mul", "alpha", "fill", "full", "where", "index_fill", "foreach_list"])
def test_complex_scalars_reach_the_device_as_complex(op):
    z = torch.complex(torch.arange(6.0), torch.arange(6.0) - 3)
    torch.testing.assert_close(op(z.to("neuron")).cpu(), op(z))


def test_item_of_complex_and_half_precision_complex():
    z = torch.tensor([1.5 - 2j], dtype=torch.complex64)
    assert z.to("neuron").item() == z.item()
    assert z.to("neuron")[0].item() == 1.5 - 2j

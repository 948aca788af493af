"""torch.sparse on neuron: COO and CSR tensors whose indices and values live
on the device; their computations run on the CPU's sparse kernels (see
torch_plugin/csrc/aten/Sparse.cc)."""

import warnings

import pytest
import torch

import torch_neuronx  # noqa: F401


def coo(device):
    indices = torch.tensor([[0, 1, 1, 0], [2, 0, 2, 2]])
    values = torch.tensor([3.0, 4.0, 5.0, 1.0])
    return torch.sparse_coo_tensor(indices, values, (2, 3), device=device)


def test_a_coo_tensor_is_made_and_taken_apart_on_the_device():
    s = coo("neuron")
    assert (s.device.type, s.layout, s._nnz(), s.sparse_dim(), s.dense_dim()) == \
        ("neuron", torch.sparse_coo, 4, 2, 0)
    assert s._indices().device.type == "neuron" and s._values().device.type == "neuron"
    assert not s.is_coalesced()
    c = s.coalesce()
    assert c.is_coalesced() and c._nnz() == 3
    assert torch.equal(c.indices().cpu(), coo("cpu").coalesce().indices())
    assert torch.equal(s.to_dense().cpu(), coo("cpu").to_dense())
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.indices()  # as on the CPU


def test_sparse_arithmetic_matches_the_cpu():
    s, expected = coo("neuron"), coo("cpu")
    dense = torch.randn(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = [
            (torch.sparse.mm(s, dense.to("neuron")), torch.sparse.mm(expected, dense)),
            (torch.addmm(torch.ones(2, 4, device="neuron"), s, dense.to("neuron")),
             torch.addmm(torch.ones(2, 4), expected, dense)),
            ((s + s).to_dense(), (expected + expected).to_dense()),
            ((s * 2.5).to_dense(), (expected * 2.5).to_dense()),
            (torch.sparse.sum(s, dim=1).to_dense(), torch.sparse.sum(expected, dim=1).to_dense()),
            (s.sum(), expected.sum()),
            (s.index_select(1, torch.tensor([2, 0], device="neuron")).to_dense(),
             expected.index_select(1, torch.tensor([2, 0])).to_dense()),
            (s.t().to_dense(), expected.t().to_dense()),
        ]
    for got, want in cases:
        assert got.device.type == "neuron"
        torch.testing.assert_close(got.cpu(), want)


def test_in_place_sparse_operators_write_the_neuron_tensor():
    s = coo("neuron").coalesce()
    target = s.clone()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = target.add_(s)
    assert result is target and target.device.type == "neuron"
    assert torch.equal(target.to_dense().cpu(), 2 * coo("cpu").to_dense())
    assert torch.equal(s.to_dense().cpu(), coo("cpu").to_dense())  # the source is untouched


def test_dense_to_sparse_and_back_in_every_layout():
    x = torch.randn(4, 6).relu()
    on_device = x.to("neuron")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        made = [on_device.to_sparse(), on_device.to_sparse(1), on_device.to_sparse_csr(),
                on_device.to_sparse_csc()]
    for sparse in made:
        assert sparse.device.type == "neuron"
        assert torch.equal(sparse.to_dense().cpu(), x)
    csr = made[2]
    assert csr.crow_indices().device.type == "neuron"
    assert torch.equal(csr.crow_indices().cpu(), x.to_sparse_csr().crow_indices())


def test_gradients_flow_through_sparse_operators():
    weight = torch.randn(3, 4, requires_grad=True)
    on_device = weight.detach().to("neuron").requires_grad_()
    torch.sparse.mm(coo("cpu"), weight).square().sum().backward()
    torch.sparse.mm(coo("neuron"), on_device).square().sum().backward()
    torch.testing.assert_close(on_device.grad.cpu(), weight.grad)

    values = torch.tensor([3.0, 4.0, 5.0], device="neuron", requires_grad=True)
    indices = torch.tensor([[0, 1, 1], [2, 0, 2]], device="neuron")
    s = torch.sparse_coo_tensor(indices, values, (2, 3))
    (s.to_dense() * torch.arange(6.0, device="neuron").view(2, 3)).sum().backward()
    assert torch.equal(values.grad.cpu(), torch.tensor([2.0, 3.0, 5.0]))


def test_sparse_tensors_move_between_devices():
    s = coo("neuron")
    back = s.cpu()
    assert back.device.type == "cpu" and torch.equal(back.to_dense(), coo("cpu").to_dense())
    assert torch.equal(coo("cpu").to("neuron").to_dense().cpu(), coo("cpu").to_dense())


def test_computations_on_sparse_tensors_are_named_as_cpu_fallbacks():
    s = coo("neuron")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        s.coalesce()
    assert "aten::_coalesce" in torch_neuronx.get_fallback_ops()

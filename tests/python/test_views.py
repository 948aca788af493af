"""Views are metadata only, and in-place operators on views write through to
their base; strided and non-contiguous tensors keep their layouts."""

import torch


def test_views_share_storage_and_write_through():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    n = base.to("neuron")
    view = n[1:3, ::2]
    assert view.data_ptr() == n.data_ptr() + (6 + 0) * 4
    assert view.stride() == (6, 2)
    view.mul_(10)
    base[1:3, ::2].mul_(10)
    torch.testing.assert_close(n.cpu(), base)
    n.t()[0].add_(1)
    base.t()[0].add_(1)
    torch.testing.assert_close(n.cpu(), base)
    n.view(24)[5] = -1
    base.view(24)[5] = -1
    torch.testing.assert_close(n.cpu(), base)


def test_view_ops_match_cpu():
    base = torch.randn(2, 3, 4)
    n = base.to("neuron")
    for fn in (lambda t: t.permute(2, 0, 1), lambda t: t.unsqueeze(1).expand(2, 5, 3, 4),
               lambda t: t.reshape(6, 4), lambda t: t.narrow(2, 1, 2), lambda t: t.select(1, 2),
               lambda t: t.unfold(2, 2, 1), lambda t: t.diagonal(dim1=1, dim2=2),
               lambda t: t.split(1, dim=1)[1], lambda t: t.flatten(1).T):
        torch.testing.assert_close(fn(n).cpu(), fn(base))


def test_non_contiguous_inputs_and_outputs():
    a = torch.randn(6, 5).t()
    b = torch.randn(5, 6)[:, ::1]
    torch.testing.assert_close((a.to("neuron") + b.to("neuron")).cpu(), a + b)
    out = torch.empty(6, 5).t()
    n_out = torch.empty(6, 5, device="neuron").t()
    torch.add(a, b, out=out)
    torch.add(a.to("neuron"), b.to("neuron"), out=n_out)
    assert n_out.stride() == out.stride()
    torch.testing.assert_close(n_out.cpu(), out)
    strided_copy = torch.empty(5, 6, device="neuron")[:, ::2]
    strided_copy.copy_(torch.ones(5, 3))
    assert strided_copy.cpu().sum().item() == 15


def test_out_argument_is_resized():
    out = torch.empty(0, device="neuron")
    torch.mul(torch.ones(3, device="neuron"), 2, out=out)
    assert out.shape == (3,) and out.cpu().tolist() == [2.0, 2.0, 2.0]


def test_sequence_creation_writes_through_a_strided_out_view():
    # linspace, logspace and arange keep the shape of an out= of the right
    # element count; the values must land in the view's elements, not in the
    # first elements of its storage.
    makers = (lambda out: torch.linspace(0, 3, 4, out=out),
              lambda out: torch.logspace(0, 3, 4, out=out),
              lambda out: torch.arange(4.0, out=out))
    for make in makers:
        expected = torch.zeros(2, 3)
        make(expected.narrow(1, 1, 2))
        actual = torch.zeros(2, 3, device="neuron")
        view = actual.narrow(1, 1, 2)
        make(view)
        assert view.stride() == (3, 1)
        torch.testing.assert_close(actual.cpu(), expected)


def test_resize_and_set():
    x = torch.arange(4.0, device="neuron")
    x.resize_(2, 3)
    assert x.shape == (2, 3)
    x[0, :2].copy_(torch.tensor([7.0, 8.0]))
    assert x.cpu()[0, :2].tolist() == [7.0, 8.0]
    y = torch.empty(0, device="neuron").set_(x.untyped_storage(), 0, (4,), (1,))
    assert y.cpu().tolist()[:2] == [7.0, 8.0]
    z = torch.tensor([], device="neuron").set_(x)
    assert x.is_set_to(z) and z.is_set_to(x)
    assert not x.is_set_to(y) and not x.is_set_to(x.clone())


def test_tensors_of_more_than_sixteen_dimensions():
    # PyTorch allows up to 64 dimensions; the daemon once refused past 16.
    shape = (1,) * 16 + (2, 3, 1, 2)
    x = torch.arange(12.0).reshape(shape)
    d = x.to("neuron")
    assert d.dim() == 20
    torch.testing.assert_close((d * 2 + 1).cpu(), x * 2 + 1)
    torch.testing.assert_close(d.sum(dim=17).cpu(), x.sum(dim=17))
    order = tuple(reversed(range(20)))
    torch.testing.assert_close(d.permute(order).contiguous().cpu(), x.permute(order).contiguous())


def test_an_out_tensor_the_operator_resizes_takes_its_layout():
    # As the CPU's TensorIterator restrides the out= tensors it resizes: the
    # result follows a permuted input's memory layout.
    for device in ("cpu", "neuron"):
        x = torch.randn(2, 3, 8, device=device)[:, :, ::2].permute(2, 0, 1)
        out = torch.add(x, x, out=torch.empty(0, device=device))
        assert out.stride() == (1, 12, 4)
        torch.testing.assert_close(out.cpu(), (x + x).cpu())

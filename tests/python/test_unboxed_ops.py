"""The unboxed kernels of the hot operators (csrc/aten/UnboxedOps.cc): they
borrow the caller's tensors instead of copying them onto a boxed stack. A
borrow released twice or never shows here as a leaked or freed-too-early
tensor, so each case checks Python refcounts, that a result's memory comes
back, and the values against the CPU; calls that need the boxed path (CPU
scalars, errors) must behave as before."""

import gc
import sys
import weakref

import pytest
import torch

import torch_neuronx

HOT = ["aten::add.out", "aten::mul.out", "aten::mm.out", "aten::relu_",
       "aten::addmm.out", "aten::sum.IntList_out", "aten::native_batch_norm",
       "aten::threshold_backward.grad_input", "aten::_log_softmax.out"]


@pytest.mark.parametrize("name", HOT)
def test_hot_operators_have_a_neuron_kernel(name):
    assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1")


def _cases(device):
    a = torch.arange(12, dtype=torch.float32).reshape(3, 4).to(device) / 7
    b = torch.linspace(-1, 1, 12).reshape(3, 4).to(device)
    m = torch.linspace(0, 1, 20).reshape(4, 5).to(device)
    return a, b, m, {
        "add": lambda: a + b,
        "add_alpha": lambda: torch.add(a, b, alpha=0.5),
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "div": lambda: a / (b.abs() + 1),
        "neg_exp_log": lambda: torch.log(torch.exp(-a) + 1),
        "sqrt_rsqrt": lambda: torch.sqrt(a) + torch.rsqrt(a + 1),
        "activations": lambda: torch.tanh(a) + torch.sigmoid(b) + torch.relu(b)
        + torch.nn.functional.gelu(b) + torch.nn.functional.silu(b),
        "where": lambda: torch.where(b > 0, a, b),
        "pow": lambda: a ** 2,
        "mm": lambda: a @ m,
        "addmm": lambda: torch.addmm(a[:, :1].expand(3, 5).contiguous(), a, m),
        "bmm": lambda: torch.bmm(a.reshape(1, 3, 4), m.reshape(1, 4, 5)),
        "sum_mean": lambda: a.sum(1) + a.mean(1),
        "log_softmax": lambda: torch.log_softmax(a, 1) + torch.softmax(b, 0),
        "broadcast_cpu_scalar": lambda: a + torch.tensor(2.0),
        "python_number": lambda: a * 3 + 1,
        "integer_promotion": lambda: torch.arange(4).to(device) + a[0],
    }


def test_results_match_the_cpu():
    _, _, _, cpu = _cases("cpu")
    _, _, _, neuron = _cases("neuron")
    for name in cpu:
        expected, got = cpu[name](), neuron[name]()
        assert got.device.type == "neuron", name
        assert got.dtype == expected.dtype, name
        torch.testing.assert_close(got.cpu(), expected, msg=name)


def test_arguments_keep_their_refcounts_and_results_are_freed():
    a, b, m, cases = _cases("neuron")
    counts = [sys.getrefcount(t) for t in (a, b, m)]
    for name, case in cases.items():
        result = case()
        ref = weakref.ref(result)
        del result
        gc.collect()
        assert ref() is None, f"{name}: the result outlived its last reference"
    assert [sys.getrefcount(t) for t in (a, b, m)] == counts
    torch.neuron.synchronize()
    before = torch_neuronx.memory_allocated()
    for _ in range(3):
        for case in cases.values():
            case()
    torch.neuron.synchronize()
    assert torch_neuronx.memory_allocated() == before


def test_in_place_returns_the_same_tensor():
    x = torch.ones(2, 3, device="neuron")
    y = torch.full((2, 3), 2.0, device="neuron")
    assert x.add_(y) is x
    assert x.mul_(y) is x
    assert x.relu_() is x
    assert x.zero_() is x
    assert x.fill_(4.0) is x
    torch.testing.assert_close(x.cpu(), torch.full((2, 3), 4.0))


def test_errors_are_raised_at_the_call_and_the_process_goes_on():
    x = torch.ones(2, 3, device="neuron")
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of tensor b \(4\)"):
        x + torch.ones(4, device="neuron")
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        torch.ones(1, 3, device="neuron").add_(torch.ones(2, 3, device="neuron"))
    # The CPU's message: structured operators keep their C++ meta function.
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)"):
        torch.mm(x, x)
    torch.testing.assert_close((x + x).cpu(), torch.full((2, 3), 2.0))


def test_autograd_through_the_unboxed_kernels():
    torch.manual_seed(0)
    w_cpu = torch.randn(4, 5, requires_grad=True)
    w = w_cpu.detach().to("neuron").requires_grad_()
    x_cpu = torch.randn(3, 4)
    for weight, inputs in ((w_cpu, x_cpu), (w, x_cpu.to("neuron"))):
        logits = torch.relu(inputs @ weight) * 2 - 1
        torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 4]).to(inputs.device)).backward()
    torch.testing.assert_close(w.grad.cpu(), w_cpu.grad)

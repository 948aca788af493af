"""The unboxed kernels of the hot operators (csrc/aten/UnboxedOps.cc): they
borrow the caller's tensors instead of copying them onto a boxed stack. A
borrow released twice or never shows here as a leaked or freed-too-early
tensor, so each case checks Python refcounts, that a result's memory comes
back, and the values against the CPU; calls that need the boxed path (CPU
scalars, errors) must behave as before."""

import gc
import subprocess
import sys
import weakref

import pytest
import torch

import torch_neuronx

HOT = ["aten::add.Tensor", "aten::add_.Tensor", "aten::add.out", "aten::mul.out", "aten::mm",
       "aten::mm.out", "aten::relu_",
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


def test_python_numbers_run_as_the_scalar_overload_with_one_executable():
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3).to("neuron")
    i = torch.arange(6).reshape(2, 3).to("neuron")
    x * 2.0
    before = torch_neuronx._C._op_stats()["executables"]
    allocations = torch_neuronx.memory_stats()["allocation.all.allocated"]
    results = [x * 3.0, x * -0.5, x * 7.25]
    # Another number is the same signature (no new executable), and travels
    # in the launch: the results are the only device memory allocated.
    assert torch_neuronx._C._op_stats()["executables"] == before
    assert torch_neuronx.memory_stats()["allocation.all.allocated"] - allocations == 3
    for got, factor in zip(results, (3.0, -0.5, 7.25)):
        torch.testing.assert_close(got.cpu(), x.cpu() * factor)
    # Promotion as the CPU's: an integer tensor and a float number give the
    # default float dtype; an integer number keeps the tensor's dtype.
    cpu_i = i.cpu()
    for got, expected in ((i + 1.5, cpu_i + 1.5), (i * 2, cpu_i * 2), (i / 2, cpu_i / 2),
                          (i * True, cpu_i * True), (torch.add(x, 1, alpha=3), x.cpu() + 3),
                          (x.clone().mul_(0.5), x.cpu() * 0.5),
                          (x.clone().sub_(1, alpha=2), x.cpu() - 2)):
        assert got.dtype == expected.dtype
        torch.testing.assert_close(got.cpu(), expected)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i.add_(1.5)
    torch.testing.assert_close(i.cpu(), cpu_i)


def test_first_operator_uses_the_cpp_meta_functions():
    # PyTorch's Python meta kernels import sympy (half a second) on their
    # first call; the hot operators' C++ meta functions do not.
    script = (
        "import sys, torch\n"
        "x = torch.ones(4, device='neuron')\n"
        "y = (x + 1) * x - x / 2\n"
        "z = torch.mm(y.reshape(2, 2), y.reshape(2, 2)).sum(1).cpu()\n"
        "assert z.tolist() == [9.0, 9.0], z\n"
        "print('sympy' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False", result.stderr


def test_in_place_fills_share_one_executable_whatever_their_value():
    x = torch.empty(3, 5, device="neuron")
    x.fill_(1.0)
    before = torch_neuronx._C._op_stats()["executables"]
    for value in (2.0, -3.5, 1e6):
        x.fill_(value)
        torch.testing.assert_close(x.cpu(), torch.full((3, 5), value))
    torch.testing.assert_close(torch.full((3, 5), 7.0, device="neuron").cpu(), torch.full((3, 5), 7.0))
    assert torch_neuronx._C._op_stats()["executables"] == before

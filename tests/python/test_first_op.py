"""The first operators of a process do not import torch._dynamo (about two
seconds): PyTorch's Python meta kernels, which new signatures run, only hide
themselves from Dynamo once Dynamo is loaded."""


def test_the_first_operators_do_not_import_dynamo(run_python):
    result = run_python(
        "import sys, torch\n"
        "x = torch.arange(6.0, device='neuron').reshape(2, 3)\n"
        "y = (torch.add(x, x) * 2).softmax(-1).sum(0)\n"
        "print(y.cpu().shape, 'torch._dynamo' in sys.modules)\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "torch.Size([3]) False", result.stdout + result.stderr


def test_once_dynamo_is_loaded_the_meta_kernels_are_hidden_from_it(run_python):
    # torch.compile traces a function whose new signatures run Python meta
    # kernels; they must not be traced into (as without torch_neuronx).
    result = run_python(
        "import torch\n"
        "x = torch.ones(3, device='neuron')\n"
        "print((x + x).cpu().tolist())\n"
        "import torch._dynamo, torch._refs\n"
        "compiled = torch.compile(lambda a: torch.add(a, 1) * 3, backend='neuron')\n"
        "print(compiled(torch.ones(2, 2, device='neuron')).cpu().tolist())\n"
        "m = torch.ones(5, device='meta')\n"
        "torch._refs.add(m, m)  # as a new signature's meta inference calls it\n"
        "# torch._refs.add: out wrapper, _disable_dynamo's inner, the function\n"
        "function = torch._refs.add.__wrapped__.__wrapped__\n"
        "cached = function.__dynamo_disable\n"
        "print(type(cached).__name__, cached is not function)\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    # What torch._dynamo.disable returns, cached as PyTorch caches it.
    assert lines == ["[2.0, 2.0, 2.0]", "[[6.0, 6.0], [6.0, 6.0]]", "function True"], (
        result.stdout)

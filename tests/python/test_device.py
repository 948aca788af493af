"""The neuron device as PyTorch sees it: registration, device module,
torch.accelerator, tensor creation and copies."""

import copy
import io
import os
import time

import pytest
import torch
import torch_neuronx


def test_import_torch_registers_the_device(run_python):
    result = run_python("import torch\nprint(torch.device('neuron').type, hasattr(torch, 'neuron'))")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["neuron", "True"]


def test_importing_the_package_before_torch_works(run_python):
    # torch's backend autoloading calls torch_neuronx._autoload while
    # `import torch_neuronx` is still importing torch: it once failed with
    # "partially initialized module 'torch_neuronx' has no attribute '_autoload'".
    result = run_python("import torch_neuronx\nimport torch\n"
                        "print(torch.ones(2, device='neuron').sum().item())")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2.0"]


def test_import_torch_without_a_daemon_still_works(run_python, tmp_path):
    result = run_python(
        "import torch\nprint(torch.neuron.is_available(), torch.neuron.device_count())",
        env={"NEURON_RTD_ADDRESS": f"unix:{tmp_path}/nobody.sock", "NEURON_RTD_AUTOSTART": "0"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "0"]


def test_device_module_and_accelerator():
    assert torch.neuron.is_available()
    count = torch.neuron.device_count()
    assert count >= 1
    assert torch.accelerator.current_accelerator().type == "neuron"
    assert torch.accelerator.device_count() == count
    torch.accelerator.set_device_index(0)
    assert torch.accelerator.current_device_index() == 0
    assert torch.accelerator.current_stream().device.type == "neuron"
    torch.accelerator.synchronize()


def test_the_device_says_what_it_is():
    # The pytest daemon runs the sim's "dev" preset: one Trainium2 chip, 4 GiB
    # of HBM, 2 logical cores.
    properties = torch.neuron.get_device_properties(0)
    assert properties.name == torch.neuron.get_device_name() == "trn2"
    assert torch.neuron.get_device_capability() == (3, 0)
    assert properties.architecture == "trainium2"
    assert properties.device_total_memory == 4 << 30
    assert properties.cores_per_device == 2
    assert properties.total_memory == 2 << 30
    assert properties.core == 0 and properties.neuron_device == 0
    assert properties.backend == "sim"
    assert "name='trn2'" in repr(properties)
    assert torch.get_device_module("neuron").get_device_name(torch.device("neuron:0")) == "trn2"
    with pytest.raises(ValueError, match="neuron:57 does not exist"):
        torch.neuron.get_device_properties(57)


def test_memory_summary_is_cudas_table_of_the_allocators_statistics():
    held = torch.empty(3 << 20, dtype=torch.uint8, device="neuron")
    summary = torch.neuron.memory_summary()
    lines = summary.splitlines()
    assert "PyTorch neuron memory summary, device ID 0" in lines[1]
    assert len({len(line) for line in lines}) == 1, summary  # a table's borders line up
    allocated = next(line for line in lines if "Allocated memory" in line)
    current = int(allocated.split("|")[2].split()[0])
    assert current == torch.neuron.memory_allocated() // 1024, summary  # shown in KiB
    assert current >= 3 << 10
    assert "from large pool" in summary
    assert "from large pool" not in torch.neuron.memory_summary(abbreviated=True)
    del held


def test_utilization_is_the_cores_busy_share_of_about_the_last_second():
    a = torch.randn(512, 512, device="neuron")
    # About a second of back-to-back products: at least half of a one-second
    # window (1 - 1/e of a fully busy core after one second).
    started = time.monotonic()
    while time.monotonic() - started < 1.0:
        for _ in range(8):
            a = torch.tanh(a @ a)
        torch.neuron.synchronize()
    busy = torch.neuron.utilization()
    assert 40 <= busy <= 100
    assert torch.neuron.utilization("neuron:0") == pytest.approx(busy, abs=10)


def test_list_processes_names_this_process_and_its_device_memory():
    held = torch.empty(8 << 20, dtype=torch.uint8, device="neuron")
    listing = torch.neuron.list_processes()
    lines = listing.splitlines()
    assert lines[0] == "neuron:0 (NeuronCore 0)"
    mine = next(line for line in lines if f"process {os.getpid():>10d} uses" in line)
    megabytes = float(mine.split("uses")[1].split()[0])
    assert megabytes >= 8
    del held


def test_device_of_and_stream_context():
    last = torch.neuron.device_count() - 1
    x = torch.ones(2, device=f"neuron:{last}")
    torch.neuron.set_device(0)
    with torch.neuron.device_of(x):
        assert torch.neuron.current_device() == last
    assert torch.neuron.current_device() == 0
    with torch.neuron.device_of(torch.ones(2)):
        assert torch.neuron.current_device() == 0
    side = torch.neuron.Stream()
    with torch.neuron.StreamContext(side):
        assert torch.neuron.current_stream() == side
    assert torch.neuron.current_stream() == torch.neuron.default_stream()


def test_bad_device_index_names_the_device():
    with pytest.raises(ValueError, match="neuron:57 does not exist"):
        torch.empty(3, device="neuron:57")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64,
                                   torch.int32, torch.int8, torch.uint8, torch.bool])
def test_round_trip_keeps_values(dtype):
    cpu = (torch.arange(24) - 7).reshape(2, 3, 4).to(dtype)
    device = cpu.to("neuron")
    assert device.device.type == "neuron" and device.dtype == dtype
    torch.testing.assert_close(device.cpu(), cpu)


def test_creation_paths():
    device = "neuron"
    assert torch.empty(2, 3, device=device).shape == (2, 3)
    torch.testing.assert_close(torch.zeros(4, device=device).cpu(), torch.zeros(4))
    torch.testing.assert_close(torch.ones(2, 2, device=device).cpu(), torch.ones(2, 2))
    torch.testing.assert_close(torch.full((3,), 2.5, device=device).cpu(), torch.full((3,), 2.5))
    torch.testing.assert_close(torch.arange(10, device=device).cpu(), torch.arange(10))
    torch.testing.assert_close(torch.arange(0, 1, 0.25, device=device).cpu(),
                               torch.arange(0, 1, 0.25))
    torch.testing.assert_close(torch.linspace(0, 1, 5, device=device).cpu(), torch.linspace(0, 1, 5))
    torch.testing.assert_close(torch.eye(3, device=device).cpu(), torch.eye(3))
    torch.testing.assert_close(torch.tensor([1, 2, 3], device=device).cpu(), torch.tensor([1, 2, 3]))
    x = torch.ones(2, 3, device=device)
    assert torch.zeros_like(x).device.type == "neuron"
    assert x.new_full((4,), 7).cpu().tolist() == [7.0] * 4
    assert torch.empty_strided((2, 3), (1, 2), device=device).stride() == (1, 2)
    assert torch.randn(5, device=device).shape == (5,)


def test_float64_keeps_its_dtype_and_precision():
    # The dtype the program asked for, computed as the CPU computes it; one
    # warning per process says that Trainium has no float64 engines.
    values = torch.tensor([1.0 + 2**-40, 1 / 3], dtype=torch.float64)
    x = values.to("neuron")
    assert x.dtype == torch.float64
    assert torch.equal(x.cpu(), values)
    assert torch.equal((x * 3 - 1).cpu(), values * 3 - 1)
    assert torch.zeros(2, dtype=torch.float64, device="neuron").dtype == torch.float64
    assert torch.arange(3.0, device="neuron").double().sum().item() == 3.0


@pytest.fixture
def float64_default():
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int32, torch.int64])
@pytest.mark.parametrize("call", [
    lambda t: torch.div(t, 3.0),
    lambda t: torch.true_divide(t, torch.arange(1, 6, device=t.device).to(t.dtype)),
    lambda t: t + 2.5,
    lambda t: torch.sqrt(t),
    lambda t: t * 1j,
    lambda t: torch.where(t > 0, t, 2.5),
    lambda t: torch.div(t, 2.0, out=torch.empty(5, device=t.device)),
], ids=["div", "true_divide", "add", "sqrt", "complex", "where", "out"])
def test_integers_promote_to_a_float64_default_dtype_as_on_the_cpu(float64_default, call, dtype):
    integers = torch.tensor([3, 0, 7, 1, 5]).to(dtype)
    expected = call(integers)
    actual = call(integers.to("neuron"))
    assert actual.dtype == expected.dtype
    torch.testing.assert_close(actual.cpu(), expected, rtol=0, atol=0)
    # In place, the result keeps its tensor's dtype and the CPU's error.
    if dtype != torch.bool:
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            integers.to("neuron").div_(2.0)


def test_print_and_item():
    x = torch.tensor([[1.0, -2.0], [3.0, 0.5]], device="neuron")
    text = repr(x)
    assert "device='neuron:0'" in text and "-2.0000" in text
    assert x[1, 0].item() == 3.0
    assert torch.tensor(True, device="neuron").item() is True


def test_save_and_load_both_ways():
    state = {"w": torch.randn(3, 4).to("neuron"), "b": torch.arange(3).to("neuron")}
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    assert loaded["w"].device.type == "neuron"
    torch.testing.assert_close(loaded["w"].cpu(), state["w"].cpu())
    buffer.seek(0)
    on_cpu = torch.load(buffer, map_location="cpu")
    assert on_cpu["b"].device.type == "cpu"
    torch.testing.assert_close(on_cpu["b"], state["b"].cpu())
    cpu_buffer = io.BytesIO()
    torch.save({"w": torch.ones(2)}, cpu_buffer)
    cpu_buffer.seek(0)
    assert torch.load(cpu_buffer, map_location="neuron")["w"].device.type == "neuron"


def test_module_to_neuron_and_methods():
    module = torch.nn.Linear(3, 2).to("neuron")
    assert module.weight.device.type == "neuron"
    x = torch.ones(3)
    assert x.neuron().is_neuron
    assert module.cpu().weight.device.type == "cpu"


def test_module_to_neuron_moves_parameters_in_place_and_keeps_tied_weights_tied():
    # As on CUDA: the Parameter objects stay (an optimizer made before .to()
    # still holds them) and a weight two modules share stays one weight
    # (GPT-2's embedding and output layer): its gradient gathers both uses.
    torch.manual_seed(0)
    embedding, head = torch.nn.Embedding(5, 4), torch.nn.Linear(4, 5, bias=False)
    head.weight = embedding.weight
    model = torch.nn.Sequential(embedding, head)
    weight = embedding.weight
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    reference = copy.deepcopy(model)
    model.to("neuron")
    assert embedding.weight is weight and head.weight is weight
    assert weight.device.type == "neuron"
    tokens = torch.tensor([0, 3, 4])
    model(tokens.to("neuron")).square().sum().backward()
    reference(tokens).square().sum().backward()
    torch.testing.assert_close(weight.grad.cpu(), reference[0].weight.grad)
    optimizer.step()
    model.to("cpu")
    assert embedding.weight is weight and head.weight is weight and weight.device.type == "cpu"


def test_a_forked_child_gets_a_clear_error_instead_of_the_parents_session(run_python):
    result = run_python(
        "import os, torch\n"
        "torch.ones(1, device='neuron').sum().item()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    try:\n"
        "        torch.ones(1, device='neuron')\n"
        "        os._exit(3)\n"
        "    except RuntimeError as error:\n"
        "        os._exit(0 if 'forked child' in str(error) and torch.neuron._is_in_bad_fork() else 4)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(os.waitstatus_to_exitcode(status), torch.ones(2, device='neuron').sum().item())\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "2.0"]


def test_manual_seed_in_a_cpu_only_program_reaches_no_daemon(run_python, tmp_path):
    result = run_python(
        "import torch\ntorch.manual_seed(3)\nprint(torch.randn(2).sum().item() == torch.randn(0).sum().item() or True)\n",
        env={"NEURON_RTD_ADDRESS": f"unix:{tmp_path}/none.sock", "NEURON_RTD_AUTOSTART": "1"})
    assert result.returncode == 0, result.stderr
    assert "started a per-user" not in result.stderr
    assert not (tmp_path / "none.sock").exists()


def test_manual_seed_before_first_use_seeds_the_device(run_python):
    code = ("import torch\ntorch.manual_seed(7)\n"
            "print(torch.randn(3, device='neuron').cpu().tolist())\n")
    first, second = run_python(code), run_python(code)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout


def test_bad_input_gets_a_clear_error_at_the_call():
    x = torch.ones(2, device="neuron")
    with pytest.raises(RuntimeError, match=r"size of tensor a \(2\) must match the size of tensor b \(3\)"):
        x + torch.ones(3, device="neuron")  # checked on meta tensors, before any launch
    with pytest.raises(RuntimeError, match="neuron:0 and cpu|got one on cpu"):
        x + torch.ones(2)
    assert (x + torch.tensor(1.0)).cpu().tolist() == [2.0, 2.0]  # CPU scalars are fine
    assert (x * 3).sum().item() == 6.0  # the stream is still healthy


@pytest.mark.parametrize("dtype", [torch.float8_e5m2, torch.float8_e4m3fn, torch.float8_e5m2fnuz,
                                   torch.float8_e4m3fnuz, torch.float8_e8m0fnu])
def test_every_float8_dtype_runs_operators(dtype):
    values = torch.tensor([0.5, 1.0, 2.0, 4.0]).to(dtype)
    device = values.to("neuron")
    assert device.dtype == dtype
    assert torch.equal(device.cpu().float(), values.float())
    # Operators that launch on the device: a copy, a fill, an index select.
    assert torch.equal(device.clone().cpu().float(), values.float())
    assert torch.equal(torch.full((2,), 2.0, dtype=dtype, device="neuron").cpu().float(),
                       torch.full((2,), 2.0))
    index = torch.tensor([3, 0], device="neuron")
    assert device.index_select(0, index).cpu().float().tolist() == [4.0, 0.5]

"""torch_neuronx.neff: compiled NEFFs as modules. They run only on real
Trainium (the daemon's nrt backend): under NEURON_TEST_DEVICE_BACKEND=nrt
(deploy/dev.sh test runs this file so) the session's daemon drives the fake
libnrt of tests/fake_nrt, whose test NEFFs name one small operation; on the
simulated device a NEFF is refused, saying where it runs."""

import gzip
import io
import json
import os
import struct
import tarfile

import pytest
import torch
import torch_neuronx

ON_NRT = os.environ.get("NEURON_TEST_DEVICE_BACKEND", "sim") == "nrt"


def test_neff(op, io_tensors, name="test", lnc=2, factor=1.0):
    """A NEFF in the real container (1024-byte header, gzip tar) whose
    neff.json the fake libnrt runs (tests/fake_nrt/fake_model.h)."""
    payload = json.dumps({"io": io_tensors, "op": op, "factor": factor}).encode()
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        member = tarfile.TarInfo("neff.json")
        member.size = len(payload)
        tar.addfile(member, io.BytesIO(payload))
    data = gzip.compress(archive.getvalue())
    header = bytearray(1024)
    struct.pack_into("<QQQQQ", header, 0, 1, 1024, len(data), 2, 0)
    header[220:220 + len(name)] = name.encode()
    struct.pack_into("<I", header, 552, lnc)
    return bytes(header) + data


test_neff.__test__ = False  # a helper, not a test


def tensor(name, usage, shape):
    return {"name": name, "usage": usage, "dtype": "float32", "shape": list(shape)}


ADD = test_neff("add", [tensor("x", "input", (4, 8)), tensor("y", "input", (4, 8)),
                        tensor("sum", "output", (4, 8))], name="add")


@pytest.mark.skipif(ON_NRT, reason="the simulated device's refusal")
def test_the_simulated_device_refuses_a_neff_saying_where_it_runs():
    with pytest.raises(RuntimeError, match="nrt backend"):
        torch_neuronx.neff.load(ADD)
    # The process goes on.
    assert (torch.ones(2, device="neuron") + 1).cpu().tolist() == [2, 2]


needs_nrt = pytest.mark.skipif(not ON_NRT, reason="NEFFs run on the nrt backend")


@needs_nrt
def test_a_neff_module_runs_on_neuron_tensors_by_position_and_by_name(tmp_path):
    path = tmp_path / "add.neff"
    path.write_bytes(ADD)
    module = torch_neuronx.neff.load(path)
    assert [info.name for info in module.inputs] == ["x", "y"]
    assert [(info.name, info.shape, info.dtype) for info in module.outputs] == [
        ("sum", (4, 8), torch.float32)]
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    torch.testing.assert_close(module(x.to("neuron"), y.to("neuron")).cpu(), x + y)
    torch.testing.assert_close(module(y=y.to("neuron"), x=x.to("neuron")).cpu(), x + y)
    # Asynchronous on the current stream, as an eager operator.
    stream = torch_neuronx.Stream()
    with torch_neuronx.stream(stream):
        out = module(x.to("neuron"), y.to("neuron"))
    stream.synchronize()
    torch.testing.assert_close(out.cpu(), x + y)


@needs_nrt
def test_wrong_inputs_raise_at_the_call_and_the_module_goes_on():
    module = torch_neuronx.neff.load(ADD, name="add")
    x = torch.randn(4, 8, device="neuron")
    with pytest.raises(ValueError, match=r"input y is torch.float32\[4, 8\]"):
        module(x, torch.randn(2, 8, device="neuron"))
    with pytest.raises(TypeError, match="missing"):
        module(x=x)
    with pytest.raises(TypeError, match="takes 2 inputs"):
        module(x)
    with pytest.raises(TypeError, match="input y must be a tensor, not list"):
        module(x, [1.0])
    # A strided input is made contiguous for the launch.
    strided = torch.randn(8, 4, device="neuron").t()
    torch.testing.assert_close(module(x, strided).cpu(), (x + strided).cpu())
    torch.testing.assert_close(module(x, x).cpu(), (x + x).cpu())


@needs_nrt
def test_a_second_process_reuses_the_loaded_neff(run_python, tmp_path):
    path = tmp_path / "scale.neff"
    path.write_bytes(test_neff("scale", [tensor("a", "input", (2, 2)),
                                         tensor("b", "output", (2, 2))], factor=3.0))
    code = ("import torch, torch_neuronx\n"
            f"m = torch_neuronx.neff.load({str(path)!r})\n"
            "print(m._neff.executable_id, m(torch.ones(2, 2, device='neuron')).cpu().tolist())\n")
    first = run_python(code)
    second = run_python(code)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert first.stdout == second.stdout
    assert first.stdout.split(" ", 1)[1].strip() == "[[3.0, 3.0], [3.0, 3.0]]"


@needs_nrt
def test_a_malformed_neff_is_refused_naming_the_problem():
    broken = bytearray(ADD)
    broken[16] ^= 1  # data_size
    with pytest.raises(ValueError, match="data_size"):
        torch_neuronx.neff.load(bytes(broken))
    with pytest.raises(TypeError, match="a path or bytes"):
        torch_neuronx.neff.load(3)

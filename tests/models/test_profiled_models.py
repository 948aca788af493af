"""torch.profiler on a real model's training step: every device command is
linked to the operator that issued it, forward and backward (which autograd
runs on its own thread), and the engines follow the operators."""

import torch
import torch.nn.functional as F
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

import torch_neuronx  # noqa: F401
from torch_neuronx.profiling import last_capture
from torchvision_compat import import_torchvision

torchvision = import_torchvision()


def test_a_profiled_resnet_step_attributes_device_time_to_its_operators():
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None, num_classes=10).to("neuron")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    images = torch.randn(2, 3, 64, 64).to("neuron")
    labels = torch.tensor([1, 7]).to("neuron")

    def step():
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()

    step()  # executables load outside the window
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        step()

    commands = [c for c in last_capture()["commands"] if c["engine"] != "Sync"]
    assert len(commands) > 100
    cpu_ops = {e.id: e.name for e in prof.events() if e.device_type == DeviceType.CPU}
    unlinked = [c["op_name"] for c in commands if c["correlation_id"] not in cpu_ops]
    assert not unlinked, unlinked[:10]
    averages = {e.key: e for e in prof.key_averages()}
    for op in ("aten::convolution", "aten::convolution_backward", "aten::native_batch_norm"):
        assert averages[op].device_time_total > 0, op
    engines = {c["op_name"].split(".")[0]: c["engine"] for c in commands}
    assert engines["aten::convolution"] == "Tensor"
    assert engines["aten::convolution_backward"] == "Tensor"
    assert engines["aten::native_batch_norm"] == "Vector"
    device_total = sum(e.self_device_time_total for e in prof.key_averages())
    assert device_total > 0

"""Streams and events: the generic torch.Stream/torch.Event and
torch_neuronx's reach one implementation; ordering across streams;
asynchronous copies from pinned memory; errors at the next sync point."""

import pytest
import torch
import torch_neuronx


def test_stream_classes_share_one_implementation():
    s = torch_neuronx.Stream()
    assert isinstance(s, torch.Stream) and s.device.type == "neuron"
    generic = torch.Stream(device="neuron")
    assert generic.device.type == "neuron" and generic.stream_id != s.stream_id
    e = torch_neuronx.Event()
    assert isinstance(e, torch.Event)
    assert torch.neuron.current_stream().stream_id == torch.accelerator.current_stream().stream_id


def test_event_orders_work_across_streams():
    producer, consumer = torch_neuronx.Stream(), torch_neuronx.Stream()
    with torch.neuron.stream(producer):
        x = torch.ones(256, 256, device="neuron")
        for _ in range(20):
            x = x @ torch.eye(256, device="neuron") + 1
        done = torch_neuronx.Event()
        done.record(producer)
    consumer.wait_event(done)
    with torch.neuron.stream(consumer):
        total = x.sum()
        x.record_stream(consumer)
    consumer.synchronize()
    assert done.query()
    assert total.item() == 256 * 256 * 21


def test_current_stream_is_per_thread_and_restored():
    s = torch_neuronx.Stream()
    before = torch.neuron.current_stream()
    with torch.neuron.stream(s):
        assert torch.neuron.current_stream() == s
    assert torch.neuron.current_stream() == before


def test_non_blocking_copy_from_pinned_memory():
    host = torch.arange(1 << 20, dtype=torch.float32).pin_memory()
    assert host.is_pinned()
    device = host.to("neuron", non_blocking=True)
    back = torch.empty_like(host).pin_memory()
    back.copy_(device, non_blocking=True)
    torch.neuron.synchronize()
    torch.testing.assert_close(back, host)


def test_error_surfaces_at_the_next_sync_point_with_the_op_name(run_python):
    result = run_python(
        "import torch, torch_neuronx\n"
        "x = torch.ones(4, device='neuron')\n"
        "bad = torch.tensor([0, 9], device='neuron')\n"
        "y = torch.index_select(x, 0, bad)  # queued: no error yet\n"
        "print('queued', flush=True)\n"
        "try:\n"
        "    torch.neuron.synchronize()\n"
        "except Exception as error:\n"
        "    print('sync:', error)\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "queued"
    assert "aten::index_select" in lines[1] and "out of range" in lines[1], result.stdout

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
        "try:\n"
        "    torch.index_select(x, 0, bad)  # the signature's first launch: checked at the call\n"
        "except IndexError as error:\n"
        "    print('call:', error, flush=True)\n"
        "w = torch.ones(6, device='neuron')\n"
        "torch.index_select(w, 0, torch.tensor([0, 1], device='neuron'))  # first launch: fine\n"
        "y = torch.index_select(w, 0, bad)  # a later launch of it: queued, no error yet\n"
        "print('queued', flush=True)\n"
        "try:\n"
        "    torch.neuron.synchronize()\n"
        "except IndexError as error:\n"
        "    print('sync:', error)\n"
        "print((x + 1).sum().item())\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("call:") and "out of range" in lines[0], result.stdout
    assert lines[1] == "queued"
    assert lines[2].startswith("sync:"), result.stdout
    assert "aten::index_select" in lines[2] and "out of range" in lines[2], result.stdout
    assert lines[3] == "8.0"


def test_copies_between_devices():
    if torch.neuron.device_count() < 2:
        pytest.skip("needs two neuron devices")
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4).to("neuron:0")
    y = x.to("neuron:1")
    assert y.device == torch.device("neuron", 1)
    torch.testing.assert_close(y.cpu(), x.cpu())
    z = torch.empty(4, 3, device="neuron:1").t()
    z.copy_(x)  # strided destination on the other device
    torch.testing.assert_close(z.cpu(), x.cpu())
    with torch.neuron.device(1):
        assert (torch.ones(2, device="neuron") * 3).device.index == 1


def test_operators_from_several_threads_at_once():
    import threading

    results, errors = {}, []

    def work(index):
        try:
            a = torch.full((64, 64), float(index), device="neuron")
            for _ in range(20):
                a = a @ torch.eye(64, device="neuron")
            results[index] = a.sum().item()
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert results == {i: float(i) * 64 * 64 for i in range(4)}


def test_pinned_source_is_not_reused_before_its_copy_ran():
    sources = []
    device = torch.empty(1 << 18, device="neuron")
    for value in range(4):
        host = torch.full((1 << 18,), float(value)).pin_memory()
        device.copy_(host, non_blocking=True)
        sources.append(device.sum())
        del host  # the buffer goes back to the cache while the copy may be queued
    assert [s.item() for s in sources] == [float(v) * (1 << 18) for v in range(4)]


def test_streams_come_from_a_bounded_pool():
    ids = {torch_neuronx.Stream().stream_id for _ in range(100)}
    assert 1 < len(ids) <= 16
    assert 0 not in ids  # the default stream is not handed out


def test_stream_priorities_are_cudas():
    lowest, highest = torch_neuronx.Stream.priority_range()
    assert lowest == 0 and highest < 0  # lower runs first, as torch.cuda's
    assert torch.neuron.Stream.priority_range() == (lowest, highest)
    high = torch_neuronx.Stream(priority=highest)
    assert high.priority == highest
    assert torch_neuronx.Stream().priority == 0
    # Out of range is clamped, as CUDA clamps.
    assert torch_neuronx.Stream(priority=-100).priority == highest
    assert torch_neuronx.Stream(priority=5).priority == 0
    # The generic API reaches the same pools; each level has its own.
    generic = torch.Stream(device="neuron", priority=highest)
    assert torch_neuronx.Stream(stream_id=generic.stream_id, device_index=generic.device_index,
                                device_type=generic.device_type).priority == highest
    default_ids = {torch_neuronx.Stream().stream_id for _ in range(20)}
    high_ids = {torch_neuronx.Stream(priority=highest).stream_id for _ in range(20)}
    assert not default_ids & high_ids


def test_work_on_a_high_priority_stream_is_ordered_by_events_as_any_other():
    high = torch_neuronx.Stream(priority=torch_neuronx.Stream.priority_range()[1])
    x = torch.ones(256, 256, device="neuron")
    y = x @ x
    done = torch_neuronx.Event()
    done.record()
    with torch_neuronx.stream(high):
        high.wait_event(done)
        z = y + 1
    high.synchronize()
    assert z[0, 0].item() == 257.0

"""The caching allocator: statistics, reuse, empty_cache, out of memory."""

import pytest
import torch


def test_stats_track_allocations_and_reuse():
    torch.neuron.synchronize()
    base = torch.neuron.memory_allocated()
    x = torch.empty(1 << 20, device="neuron")  # 4 MiB
    assert torch.neuron.memory_allocated() == base + (4 << 20)
    assert torch.neuron.max_memory_allocated() >= base + (4 << 20)
    reserved = torch.neuron.memory_reserved()
    address = x.data_ptr()
    del x
    assert torch.neuron.memory_allocated() == base
    y = torch.empty(1 << 20, device="neuron")
    assert y.data_ptr() == address  # reused from the cache, no daemon call
    assert torch.neuron.memory_reserved() == reserved
    stats = torch.neuron.memory_stats()
    assert stats["allocation.all.current"] >= 1
    assert torch.accelerator.memory_allocated() == torch.neuron.memory_allocated()


def test_empty_cache_returns_memory_to_the_daemon():
    x = torch.empty(8 << 20, device="neuron")
    del x
    assert torch.neuron.memory_reserved() > 0
    torch.neuron.empty_cache()
    assert torch.neuron.memory_reserved() < 32 << 20


def test_out_of_memory_raises_with_numbers_and_leaks_nothing():
    before = torch.neuron.memory_allocated()
    with pytest.raises(torch.OutOfMemoryError, match=r"neuron:0 out of memory: tried to allocate 4\.00 GiB"):
        torch.empty(1 << 30, device="neuron")
    assert torch.neuron.memory_allocated() == before
    assert (torch.ones(4, device="neuron") * 2).sum().item() == 8

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
    for empty_cache in (torch.neuron.empty_cache, torch.accelerator.empty_cache):
        x = torch.empty(8 << 20, device="neuron")
        del x
        assert torch.neuron.memory_reserved() >= 32 << 20
        empty_cache()
        assert torch.neuron.memory_reserved() < 32 << 20
    assert torch.accelerator.memory_stats()["reserved_bytes.all.current"] == torch.neuron.memory_reserved()
    free, total = torch.neuron.mem_get_info()
    assert 0 < free <= total


def test_out_of_memory_raises_with_numbers_and_leaks_nothing():
    before = torch.neuron.memory_allocated()
    with pytest.raises(torch.OutOfMemoryError, match=r"neuron:0 out of memory: tried to allocate 4\.00 GiB"):
        torch.empty(1 << 30, device="neuron")
    assert torch.neuron.memory_allocated() == before
    assert (torch.ones(4, device="neuron") * 2).sum().item() == 8


def test_record_stream_defers_reuse_until_the_other_stream_is_done():
    import torch_neuronx

    side = torch_neuronx.Stream()
    big = torch.randn(1024, 1024, device="neuron")
    # A signature's first launch is waited for: warm both up so that the
    # side stream's queue below stays asynchronous.
    big @ big
    torch.empty(1 << 18, device="neuron").add_(1)
    x = torch.empty(1 << 18, device="neuron")
    address = x.data_ptr()
    with torch.neuron.stream(side):
        side.wait_stream(torch.neuron.current_stream())
        busy = big
        for _ in range(40):  # a long queue of work on the side stream
            busy = busy @ big
        x.record_stream(side)
        x.add_(1)
    del x
    y = torch.empty(1 << 18, device="neuron")
    assert y.data_ptr() != address  # the side stream may still use that block
    side.synchronize()
    del y
    z = torch.empty(1 << 18, device="neuron")
    w = torch.empty(1 << 18, device="neuron")
    assert address in (z.data_ptr(), w.data_ptr())  # reusable once it finished
    del busy


def test_per_process_memory_fraction_is_enforced_by_the_daemon():
    total = torch.neuron.mem_get_info()[1]
    assert torch.neuron.get_per_process_memory_fraction() == 1.0
    kept = torch.ones(1024, device="neuron")
    # The cap counts what the caching allocator holds: blocks earlier tests
    # of this process left cached, or hold still, count against it; the cap
    # leaves 1% of the core beyond them.
    torch.neuron.empty_cache()
    fraction = (torch.neuron.memory_reserved() + total * 0.01) / total
    try:
        torch.neuron.set_per_process_memory_fraction(fraction)
        assert torch.neuron.get_per_process_memory_fraction() == fraction
        within = torch.empty(int(total * 0.005) // 4, device="neuron")
        with pytest.raises(torch.OutOfMemoryError, match="memory cap on core"):
            torch.empty(int(total * 0.02) // 4, device="neuron")
        # The process goes on, its tensors intact.
        within.fill_(2.0)
        assert within[:3].tolist() == [2.0, 2.0, 2.0] and kept.sum().item() == 1024
        del within
        torch.neuron.empty_cache()
        # 1.0 removes the cap.
        torch.neuron.set_per_process_memory_fraction(1.0)
        big = torch.empty(int(total * 0.02) // 4, device="neuron")
        assert big.numel() > 0
    finally:
        torch.neuron.set_per_process_memory_fraction(1.0)
    with pytest.raises(TypeError, match="must be `float`"):
        torch.neuron.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match="Invalid fraction value: 1.5"):
        torch.neuron.set_per_process_memory_fraction(1.5)


def test_a_lazy_clone_shares_memory_until_one_side_writes():
    # torch._lazy_clone (copy-on-write): reads keep the storage shared, the
    # first write copies the writer out, the last reference takes the memory.
    x = torch.arange(6.0, device="neuron").reshape(2, 3)
    original = x.cpu()
    clone = torch._lazy_clone(x)
    assert torch._C._is_cow_tensor(x) and torch._C._is_cow_tensor(clone)
    assert torch.equal((x + clone).cpu(), original * 2)
    assert torch._C._is_cow_tensor(x) and torch._C._is_cow_tensor(clone)  # read only
    clone.add_(1)
    assert not torch._C._is_cow_tensor(clone)
    assert torch.equal(clone.cpu(), original + 1) and torch.equal(x.cpu(), original)
    x.mul_(2)  # the last reference: no copy
    assert not torch._C._is_cow_tensor(x) and torch.equal(x.cpu(), original * 2)


def test_lazy_clones_free_their_memory_once_each_is_gone():
    torch.neuron.synchronize()
    base = torch.neuron.memory_allocated()
    x = torch.ones(1 << 18, device="neuron")  # 1 MiB
    clones = [torch._lazy_clone(x) for _ in range(3)]
    assert torch.neuron.memory_allocated() == base + (1 << 20)  # shared
    clones[0].copy_(torch.zeros(1 << 18))
    assert torch.neuron.memory_allocated() == base + (2 << 20)
    assert clones[0].sum().item() == 0 and clones[1].sum().item() == 1 << 18
    del x, clones
    assert torch.neuron.memory_allocated() == base


@pytest.mark.parametrize("dtype, fill", [(torch.float32, float("nan")), (torch.complex64, complex("nan")),
                                         (torch.int32, 2**31 - 1), (torch.uint8, 255), (torch.bool, True),
                                         (torch.uint64, 2**64 - 1)])
def test_deterministic_mode_fills_new_memory_as_the_cpu_does(dtype, fill):
    from torch.testing._internal.common_utils import DeterministicGuard
    with DeterministicGuard(True, fill_uninitialized_memory=True):
        empty = torch.empty(2, 3, device="neuron", dtype=dtype)
        strided = torch.empty_strided((2, 3), (1, 2), device="neuron", dtype=dtype)
        grown = torch.zeros(2, device="neuron", dtype=dtype)
        grown.resize_(5)
        cpu_grown = torch.zeros(2, dtype=dtype)
        cpu_grown.resize_(5)
    expected = torch.full((2, 3), fill, dtype=dtype)
    for tensor in (empty, strided):
        assert torch.equal(tensor.cpu(), expected) or (tensor.cpu().isnan().all() and expected.isnan().all())
    assert grown.cpu()[:2].eq(0).all()
    assert torch.equal(grown.cpu()[2:].isnan(), cpu_grown[2:].isnan())
    if not (dtype.is_floating_point or dtype.is_complex):
        assert torch.equal(grown.cpu(), cpu_grown)

"""``torch.neuron.memory_summary``: the caching allocator's statistics as a
table, laid out as ``torch.cuda.memory_summary`` lays out CUDA's so that
people and tools that read one read the other."""

_WIDTH = 75

_BYTE_METRICS = [
    ("allocated_bytes", "Allocated memory"),
    ("active_bytes", "Active memory"),
    ("requested_bytes", "Requested memory"),
    ("reserved_bytes", "Reserved memory"),
]
_COUNT_METRICS = [
    ("allocation", "Allocations"),
    ("active", "Active allocs"),
    ("segment", "Reserved segments"),
]
_POOLS = [("large_pool", "      from large pool"), ("small_pool", "      from small pool")]


def _format_size(size, reference):
    """Bytes in the unit that keeps `reference` (the row's first value)
    readable, as CUDA's summary does."""
    for unit in ("B  ", "KiB", "MiB", "GiB", "TiB"):
        if reference < 768 * 1024 or unit == "TiB":
            return f"{size:6d} {unit}"
        size //= 1024
        reference /= 1024
    raise AssertionError("unreachable")


def _format_count(count, reference):
    for unit in (" ", "K", "M"):
        if reference < 750 * 1000 or unit == "M":
            return f"{count:7d} {unit} "
        count //= 1000
        reference /= 1000
    raise AssertionError("unreachable")


def format_summary(stats, device_index, abbreviated=False):
    """`stats` as ``torch.neuron.memory_stats`` returns them (flat keys)."""
    lines = ["=" * _WIDTH,
             f" {'':16} PyTorch neuron memory summary, device ID {device_index:<15d} ",
             "-" * _WIDTH,
             f"  {'':7} Device OOMs: {stats['num_ooms']:<12d} | {'':2} "
             f"allocation retries: {stats['num_alloc_retries']:<8d}  ",
             "=" * _WIDTH,
             "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
    for metrics, formatter in ((_BYTE_METRICS, _format_size), (_COUNT_METRICS, _format_count)):
        for key, name in metrics:
            lines.append("-" * _WIDTH)
            rows = [("all", name)] + ([] if abbreviated else _POOLS)
            reference = None
            for pool, label in rows:
                values = [stats[f"{key}.{pool}.{field}"]
                          for field in ("current", "peak", "allocated", "freed")]
                reference = reference or values
                cells = " | ".join(formatter(value, ref) for value, ref in zip(values, reference))
                lines.append(f" {label:<21} | {cells} ")
    lines.append("=" * _WIDTH)
    return "|" + "|\n|".join(line.ljust(_WIDTH) for line in lines) + "|\n"

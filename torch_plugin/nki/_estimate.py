"""nki.estimate: a kernel's time on a real NeuronCore, predicted from its
trace. The simulated device runs kernels on the CPU, so its time says
nothing about Trainium; this model does, roughly.

Every instruction goes to its engine (Tensor, Vector, Scalar, GpSimd, or
the DMA queues) and takes the cycles the NKI documentation gives for it, at
that engine's clock. Instructions are scheduled in program order, each
starting when its engine is free and when every earlier instruction it
depends on has finished (read-after-write, write-after-read and
write-after-write over the bytes they touch: tiles that the trace-time
allocator placed on the same bytes depend on each other, as on hardware).
A dependency between two engines costs a semaphore hand-off.

The constants and where they come from (AWS Neuron documentation, SDK
2.29-2.33: the NKI architecture guides for trn1/inf2 and trn2, the DMA
bandwidth guide, and each nki.isa instruction's "estimated instruction
cost") are in _TARGETS and _cycles below, and listed in docs/nki.md.
"""

import dataclasses

import torch

from nki import _target

# Per target: engine clocks (GHz), DMA bandwidth per engine (bytes/ns), DMA
# engines per core, fixed cost of one DMA (ns), TensorE bf16 peak (TFLOPS).
_TARGETS = {
    "trn1": dict(clock_ghz={"tensor": 2.8, "vector": 1.12, "scalar": 1.4, "gpsimd": 1.4},
                 dma_bytes_per_ns=17.0, dma_engines=16, dma_fixed_ns=1300.0, peak_tflops=95.0),
    "trn2": dict(clock_ghz={"tensor": 2.4, "vector": 0.96, "scalar": 1.2, "gpsimd": 1.2},
                 dma_bytes_per_ns=23.0, dma_engines=16, dma_fixed_ns=1300.0, peak_tflops=79.0),
}
# Minimum initiation interval of the Vector and Scalar engines (cycles).
_MIN_II = 64
# GpSimd's fixed start cost (cycles).
_GPSIMD_START = 150
# An instruction waiting on another engine's result: a semaphore hand-off.
_SYNC_CYCLES = 100
# Below this many contiguous bytes per partition a DMA runs below peak.
_DMA_EFFICIENT_RUN = 2048
ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")


@dataclasses.dataclass
class Estimate:
    """A kernel's predicted time on the target and where it goes."""

    kernel: str
    target: str
    instructions: int
    total_us: float
    # Per engine: microseconds busy, and busy over total.
    busy_us: dict
    utilization: dict
    # Tensor-engine FLOPs over the target's peak for the predicted time.
    mfu: float
    hbm_bytes: int

    def __str__(self):
        lines = [f"{self.kernel} on {self.target} (predicted by nki.estimate): "
                 f"{self.total_us:.2f} us, {self.instructions} instructions, "
                 f"MFU {self.mfu:.1%}, {self.hbm_bytes} HBM bytes"]
        for engine in ENGINES:
            lines.append(f"  {engine:7s} {self.busy_us[engine]:9.2f} us busy "
                         f"{self.utilization[engine]:7.1%}")
        return "\n".join(lines)


_DMA = frozenset({"dma_copy", "dma_transpose", "dma_compute"})
_GPSIMD = frozenset({"iota", "affine_select", "local_gather", "nc_n_gather", "sequence_bounds",
                     "nonzero_with_count", "tensor_partition_reduce"})


def _engine(opcode, operands):
    if opcode in _DMA:
        return "dma"
    if opcode == "nc_matmul":
        return "tensor"
    if opcode == "nc_transpose":
        return "tensor" if operands[0]._allocation.space == "psum" else "vector"
    if opcode == "activation":
        return "scalar"
    if opcode in _GPSIMD:
        return "gpsimd"
    return "vector"


def _per_partition(tensor):
    return max(1, tensor.size // max(1, tensor.shape[0]))


def _narrow(*tensors):
    return all(t.dtype in (torch.bfloat16, torch.float16) for t in tensors)


def _in_sbuf(*tensors):
    return all(t._allocation.space == "sbuf" for t in tensors)


def _cycles(opcode, operands, alu, flags):
    """Engine cycles of one instruction (the nki.isa cost formulas)."""
    present = [o for o in operands if o is not None]
    elements = max(_per_partition(t) for t in present)
    if opcode == "nc_matmul":
        _, stationary, moving = operands
        if len(flags) > 1 and flags[1]:  # transpose mode: twice fp32's rate
            return max(min(64, _per_partition(stationary)), stationary.shape[0]) * \
                (2 if stationary.dtype == torch.float32 else 1)
        cycles = max(min(64, _per_partition(stationary)), _per_partition(moving))
        if stationary.dtype == torch.float32:
            cycles *= 4  # fp32 runs at a quarter of the bf16 rate
        elif len(flags) > 2 and flags[2]:
            cycles = max(1, cycles // 2)  # fp8 in double-row mode: two rows a cycle
        return cycles
    if opcode == "nc_transpose":
        data = operands[1]
        if operands[0]._allocation.space == "psum":
            return max(data.shape[0], min(64, _per_partition(data)))
        return max(_MIN_II, elements)
    if opcode in ("tensor_copy", "tensor_scalar", "memset"):
        if _narrow(*present) and _in_sbuf(*present):
            return max(_MIN_II, elements // 4)  # trn2: 4x for 16-bit SBUF operands
        if _narrow(*present):
            return max(_MIN_II, elements // 2)
        return max(_MIN_II, elements)
    if opcode == "tensor_tensor":
        _, first, second = operands
        one_psum = (first._allocation.space == "psum") != (second._allocation.space == "psum")
        if one_psum or (_narrow(*present) and _in_sbuf(*present)
                        and alu[0] in ("add", "subtract", "multiply")):
            return max(_MIN_II, elements)
        return max(_MIN_II, 2 * elements)
    if opcode == "tensor_reduce":
        data = operands[1]
        if _narrow(data) and alu[0] in ("add", "maximum"):
            return max(_MIN_II, _per_partition(data) // 2)
        return max(_MIN_II, _per_partition(data))
    if opcode == "activation":
        cycles = max(_MIN_II, elements)
        return cycles + (_MIN_II if operands[4] is not None else 0)
    if opcode in ("iota", "affine_select", "nc_n_gather", "sequence_bounds",
                  "nonzero_with_count", "tensor_partition_reduce", "local_gather"):
        return _GPSIMD_START + elements
    if opcode in ("tensor_tensor_scan", "bn_aggr"):
        return max(_MIN_II, 2 * elements if opcode == "tensor_tensor_scan" else
                   13 * elements // 3)
    if opcode == "scalar_tensor_tensor":
        _, data, _, operand1 = operands
        fast = _narrow(data, operand1) and alu == ["subtract", "multiply"] and elements % 2 == 0
        return max(_MIN_II, elements if fast else 2 * elements)
    if opcode == "tensor_scalar_reduce":
        return max(_MIN_II, elements) + _MIN_II
    if opcode in ("max8", "nc_find_index8"):
        return elements
    return max(_MIN_II, elements)


# Operands an instruction writes (the rest it reads).
_WRITES = {"activation": {0, 4}, "tensor_scalar_reduce": {0, 3}, "exponential": {0, 3},
           "range_select": {0, 4}, "select_reduce": {0, 4}, "nc_match_replace8": {0, 3}}


def _dma_ns(operands, constants):
    dst, src = operands
    size = src.size * src.dtype.itemsize
    rows = src.shape[0] if len(src.shape) > 1 else 1
    run_bytes = (src.size // rows) * src.dtype.itemsize if src.strides[-1] == 1 else \
        src.dtype.itemsize
    engines = min(constants["dma_engines"], rows)
    efficiency = min(1.0, run_bytes / _DMA_EFFICIENT_RUN)
    bandwidth = constants["dma_bytes_per_ns"] * engines * max(efficiency, 1 / 64)
    return size / bandwidth


def _footprint(tensor):
    """(memory, partition range, element or byte range) the access touches."""
    allocation = tensor._allocation
    low = high = tensor.offset
    for size, stride in zip(tensor.shape, tensor.strides):
        span = (size - 1) * stride
        if span < 0:
            low += span
        else:
            high += span
    if allocation.space == "hbm":
        if tensor._indirect is not None:
            # Offsets read at run time: any element of the tensor.
            low, high = 0, allocation.elements - 1
        return ("hbm", allocation.index), (0, 1), (low, high + 1)
    free = allocation.free_elements
    element = allocation.element_bytes
    first, last = low // free, high // free
    column_low = min(low % free, high % free) if first == last else 0
    column_high = max(low % free, high % free) if first == last else free - 1
    start = allocation.partition_start
    return ((allocation.space,), (start + first, start + last + 1),
            (allocation.byte_offset + column_low * element,
             allocation.byte_offset + (column_high + 1) * element))


def _overlap(a, b):
    return a[0] == b[0] and a[1][0] < b[1][1] and b[1][0] < a[1][1] and \
        a[2][0] < b[2][1] and b[2][0] < a[2][1]


def estimate_trace(traced):
    """The Estimate of a TracedKernel."""
    trace = traced.trace
    target = trace.target.name
    constants = _TARGETS[target]
    clock = constants["clock_ghz"]
    engine_free = dict.fromkeys(ENGINES, 0.0)
    busy = dict.fromkeys(ENGINES, 0.0)
    dma_pipe_free = 0.0
    # Per earlier instruction: (engine, end, footprints read, footprints written).
    history = []
    flops = 0
    hbm_bytes = 0
    for opcode, operands, alu, _, _, flags, _, _ in trace.instructions:
        engine = _engine(opcode, operands)
        writes = _WRITES.get(opcode, {0})
        reads = [_footprint(o) for i, o in enumerate(operands)
                 if o is not None and (i not in writes or (opcode == "nc_matmul" and flags[0]))]
        written = [_footprint(o) for i, o in enumerate(operands)
                   if o is not None and i in writes]
        ready = 0.0
        for earlier_engine, end, earlier_reads, earlier_writes in history:
            conflict = any(_overlap(w, r) for w in earlier_writes for r in reads) or any(
                _overlap(w, x) for w in written for x in earlier_writes + earlier_reads)
            if conflict:
                hand_off = 0.0 if earlier_engine == engine else \
                    _SYNC_CYCLES / clock.get(engine, clock["vector"])
                ready = max(ready, end + hand_off)
        if engine == "dma":
            transfer = _dma_ns(operands[:2], constants) * max(1, len(operands) - 1)
            start = max(ready, dma_pipe_free)
            dma_pipe_free = start + transfer
            end = start + constants["dma_fixed_ns"] + transfer
            busy["dma"] += transfer
            engine_free["dma"] = max(engine_free["dma"], dma_pipe_free)
            hbm_bytes += sum(o.size * o.dtype.itemsize for o in operands
                             if o._allocation.space == "hbm")
        else:
            duration = _cycles(opcode, operands, alu, flags) / clock[engine]
            start = max(ready, engine_free[engine])
            end = start + duration
            engine_free[engine] = end
            busy[engine] += duration
        if opcode == "nc_matmul" and not (len(flags) > 1 and flags[1]):
            _, stationary, moving = operands
            rows = 2 if len(flags) > 2 and flags[2] else 1
            flops += 2 * stationary.shape[0] * _per_partition(stationary) * \
                _per_partition(moving) // rows
        history.append((engine, end, reads, written))
    total_ns = max((entry[1] for entry in history), default=0.0)
    total_us = total_ns / 1e3
    return Estimate(
        kernel=trace.name, target=target, instructions=len(trace.instructions),
        total_us=total_us,
        busy_us={engine: busy[engine] / 1e3 for engine in ENGINES},
        utilization={engine: (busy[engine] / total_ns if total_ns else 0.0) for engine in ENGINES},
        mfu=(flops / (constants["peak_tflops"] * 1e3 * total_ns)) if total_ns else 0.0,
        hbm_bytes=hbm_bytes)


def estimate(kernel):
    """nki.estimate(kernel)(*args): the kernel's predicted time on the
    target (NEURON_PLATFORM_TARGET_OVERRIDE; trn2) as an Estimate, from its
    trace for these arguments; nothing runs."""
    from nki import _kernel

    def predict(*args, **kwargs):
        return estimate_trace(_kernel.trace(kernel, *args, **kwargs))

    return predict


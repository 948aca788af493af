#!/usr/bin/env python3
"""Writes NKI kernel seeds of executable_load_fuzz
(seeds/executable_load/nki_*.txtpb, text neuron.rtd.v1.ExecutableBody)
from kernels of the project's NKI kernel suite (tests/nki) and of
tests/python/test_nki_instructions.py, traced here: one seed per kernel, so
that every instruction the kernel format has reaches the fuzzer. Run with
the project's venv after changing the kernel format, then
tests/fuzz/encode_seeds.sh; commit both."""

import os
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "nki"), str(ROOT / "tests" / "python")]

import nki  # noqa: E402

SEEDS = ROOT / "tests" / "fuzz" / "seeds" / "executable_load"


def access_fields(access):
    allocation, offset, dims = access[:3]
    strides = " ".join(f"strides: {s}" for s, _ in dims)
    counts = " ".join(f"counts: {c}" for _, c in dims)
    text = f"allocation: {allocation} offset: {offset} {strides} {counts}"
    if len(access) > 3 and access[3] is not None:
        index, dim, stride = access[3]
        text += f" indirect {{ index {{ {access_fields(index)} }} dim: {dim} stride: {stride} }}"
    return text


def access_text(access):
    if access is None:
        return "operands { }"
    return f"operands {{ access {{ {access_fields(access)} }} }}"


def dtype_number(dtype):
    import torch
    if isinstance(dtype, int):
        return dtype
    return {torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.float16: 5,
            torch.float32: 6, torch.bool: 11, torch.bfloat16: 15, torch.float8_e5m2: 23,
            torch.float8_e4m3fn: 24, torch.uint16: 27, torch.uint32: 28,
            torch.float8_e8m0fnu: 44}[dtype]


def seed_text(traced):
    name, target, allocations, instructions, locations = traced.description
    lines = ["nki_kernel {", f'  name: "{name}"',
             f"  target {{ partitions: {target[0]} sbuf_partition_bytes: {target[1]} "
             f"psum_partition_bytes: {target[2]} }}"]
    spaces = {0: "SPACE_HBM", 1: "SPACE_SBUF", 2: "SPACE_PSUM"}
    for (space, dtype, label, address, elements, partitions, free, start, offset,
         shape) in allocations:
        shape_text = " ".join(f"shape: {s}" for s in shape)
        lines.append(f"  allocations {{ space: {spaces[space]} dtype: {dtype_number(dtype)} "
                     f'name: "{label}" address_index: {address} elements: {elements} '
                     f"partitions: {partitions} free_elements: {free} partition_start: {start} "
                     f"byte_offset: {offset} {shape_text} }}")
    for opcode, operands, alu, activation, scalars, flags, axes, source in instructions:
        parts = [f'opcode: "{opcode}"'] + [access_text(o) for o in operands]
        parts += [f'alu: "{a or ""}"' for a in alu]
        parts.append(f'activation: "{activation or "copy"}"')
        parts += [f"scalars: {s!r}" for s in scalars]
        parts += [f"flags: {str(f).lower()}" for f in flags]
        parts += [f"axes: {a}" for a in axes]
        parts.append(f"source: {source}")
        lines.append(f"  instructions {{ {' '.join(parts)} }}")
    lines += [f'  source_locations: "{location}"' for location in locations]
    lines.append("}")
    return "\n".join(lines) + "\n"


def kernels():
    """(seed name, kernel, arguments) of the kernels seeded."""
    import current_attention
    import current_kernels
    import legacy_attention
    import legacy_kernels
    import suite
    rng = np.random.default_rng(0)
    chosen = {
        "nki_scan_and_broadcast": (legacy_kernels.selective_scan, "legacy_mamba_selective_scan"),
        "nki_masked_layernorm": (legacy_kernels.layernorm, "legacy_layernorm_bn_stats"),
        "nki_causal_affine_select": (legacy_attention.causal_scores,
                                     "legacy_causal_mask_affine_select"),
        "nki_flash_backward": (current_attention.flash_backward,
                               "current_flash_attention_backward"),
        "nki_fp8_double_row": (current_kernels.matmul_fp8, "current_matmul_fp8_double_row"),
        "nki_router_top8": (current_kernels.router_top2, "current_moe_router_top2"),
        "nki_access_pattern_pool": (current_kernels.pool_rows, "current_pool_access_pattern"),
    }
    for seed, (kernel, case) in chosen.items():
        arrays = suite.CASES[case].inputs(rng, "small")
        if case == "legacy_layernorm_bn_stats":
            arrays = arrays + [1e-5]
        yield seed, kernel, arrays
    yield "nki_indirect_rows", nki.jit(indirect_rows), [
        rng.standard_normal((64, 32), np.float32), rng.integers(0, 64, (16, 1)).astype(np.int32)]
    yield "nki_every_other_instruction", nki.jit(every_other_instruction), [
        rng.standard_normal((32, 64), np.float32), rng.integers(0, 60, (32, 4)).astype(np.uint16),
        rng.integers(0, 255, (32, 8)).astype(np.uint8)]


def indirect_rows(table, rows):
    """Rows gathered by an index read at run time, scattered and accumulated back."""
    import nki.isa as nisa
    import nki.language as nl
    out = nl.ndarray(table.shape, dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(out, table)
    index = nl.load(rows)
    picked = nl.ndarray((16, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(picked, table.ap([[32, 16], [1, 32]], vector_offset=index, indirect_dim=0))
    nisa.dma_copy(out.ap([[32, 16], [1, 32]], vector_offset=index, indirect_dim=0), picked)
    target = out.ap([[32, 16], [1, 32]], vector_offset=index, indirect_dim=0)
    nisa.dma_compute(target, [target, picked], nl.add)
    return out


def every_other_instruction(x, ids, bytes_e4m3):
    """One of each instruction the suite's kernels leave out."""
    import nki.isa as nisa
    import nki.language as nl
    out = nl.ndarray((32, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    tile = nl.load(x)
    work = nl.ndarray((32, 64), dtype=nl.float32, buffer=nl.sbuf)
    column = nl.ndarray((32, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(work, tile, nl.multiply, nl.add, 2.0)
    nisa.tensor_scalar_reduce(work, tile, nl.add, 1.0, nl.maximum, reduce_res=column,
                              reduce_cmd=nisa.reduce_cmd.load_reduce, reduce_init=0.5)
    nisa.exponential(work, tile, max_value=column, reduce_res=column,
                     reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.scalar_tensor_tensor(work, tile, nl.subtract, column, nl.multiply, work)
    nisa.range_select(work, tile, nl.greater_equal, nl.less, column, column, reduce_res=column)
    nisa.select_reduce(work, tile, work, -1.0, reduce_res=column,
                       reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.tensor_partition_reduce(column[0:1, :], nl.add, tile[:, 0:1])
    replaced = nl.ndarray((32, 64), dtype=nl.float32, buffer=nl.sbuf)
    where = nl.ndarray((32, 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.nc_match_replace8(replaced, tile, tile[:, 0:8], 0.0, dst_idx=where)
    nisa.nc_stream_shuffle(work, replaced, list(range(31, -1, -1)))
    index = nl.load(ids)
    gathered = nl.ndarray((32, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_n_gather(gathered, tile, nl.copy(index, dtype=nl.uint32))
    nisa.local_gather(work[:, 0:16], tile, index, num_elem_per_idx=2, num_valid_indices=8)
    bounds = nl.ndarray((1, 2, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.sequence_bounds(bounds, tile[0:1, 0:8])
    counts = nl.ndarray((32, 65), dtype=nl.int32, buffer=nl.sbuf)
    nisa.nonzero_with_count(counts, tile)
    nl.random_seed(7)
    nisa.dropout(work, tile, 0.5)
    fp8 = nl.load(bytes_e4m3).view(nl.float8_e4m3)
    nisa.tensor_copy(work[:, 0:8], fp8)
    transposed = nl.ndarray((8, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_transpose(transposed, x[:, 0:8])
    nisa.dma_compute(out, [x, x], nl.add)
    nl.store(out, work)
    return out


def main():
    os.environ.setdefault("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    for seed, kernel, arguments in kernels():
        traced = nki.trace(kernel, *arguments)
        (SEEDS / f"{seed}.txtpb").write_text(seed_text(traced))
        print(f"{seed}: {traced.instruction_count} instructions")


if __name__ == "__main__":
    main()

"""A tiled elementwise add in nki.isa: tiles of [128, 512] moved by DMA
between HBM and SBUF, added on the Vector engine. Once with loops, once as
a launch grid with one instance per tile.

    python examples/nki/tensor_add.py
"""

import torch

import nki
import nki.isa as nisa
import nki.language as nl

TILE_ROWS, TILE_COLUMNS = 128, 512


@nki.jit
def tensor_add_kernel(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, columns = a.shape
    for r in nl.affine_range(rows // TILE_ROWS):
        for c in nl.affine_range(columns // TILE_COLUMNS):
            rows_at = nl.ds(r * TILE_ROWS, TILE_ROWS)
            columns_at = nl.ds(c * TILE_COLUMNS, TILE_COLUMNS)
            a_tile = nl.ndarray((TILE_ROWS, TILE_COLUMNS), dtype=a.dtype, buffer=nl.sbuf)
            b_tile = nl.ndarray((TILE_ROWS, TILE_COLUMNS), dtype=b.dtype, buffer=nl.sbuf)
            nisa.dma_copy(a_tile, a[rows_at, columns_at])
            nisa.dma_copy(b_tile, b[rows_at, columns_at])
            sum_tile = nl.ndarray((TILE_ROWS, TILE_COLUMNS), dtype=a.dtype, buffer=nl.sbuf)
            nisa.tensor_tensor(sum_tile, a_tile, b_tile, op=nl.add)
            nisa.dma_copy(out[rows_at, columns_at], sum_tile)
    return out


# One instance per tile: kernel[rows // 128, columns // 512](a, b).
@nki.jit
def tensor_add_grid_kernel(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows_at = nl.ds(nl.program_id(0) * TILE_ROWS, TILE_ROWS)
    columns_at = nl.ds(nl.program_id(1) * TILE_COLUMNS, TILE_COLUMNS)
    sum_tile = nl.add(nl.load(a[rows_at, columns_at]), nl.load(b[rows_at, columns_at]))
    nl.store(out[rows_at, columns_at], value=sum_tile)
    return out


def main():
    a = torch.randn(256, 1024, dtype=torch.float16, device="neuron")
    b = torch.randn(256, 1024, dtype=torch.float16, device="neuron")
    expected = a.cpu() + b.cpu()
    print("loops match:", torch.equal(tensor_add_kernel(a, b).cpu(), expected))
    print("grid matches:", torch.equal(tensor_add_grid_kernel[2, 2](a, b).cpu(), expected))


if __name__ == "__main__":
    main()

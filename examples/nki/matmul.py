"""A tiled matmul on the Tensor engine: out[M, N] = lhsT[K, M]^T @ rhs[K, N],
contracting over K in steps of 128 partitions and accumulating each
[128, 512] block of the result in float32 in PSUM.

    python examples/nki/matmul.py
"""

import torch

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_kernel(lhsT, rhs):
    contraction, rows = lhsT.shape
    _, columns = rhs.shape
    out = nl.ndarray((rows, columns), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    tile_m = nl.tile_size.gemm_stationary_fmax  # 128
    tile_k = nl.tile_size.pmax                  # 128
    tile_n = nl.tile_size.gemm_moving_fmax      # 512
    for m in nl.affine_range(rows // tile_m):
        for n in nl.affine_range(columns // tile_n):
            accumulator = nl.ndarray((tile_m, tile_n), dtype=nl.float32, buffer=nl.psum)
            for k in nl.sequential_range(contraction // tile_k):
                stationary = nl.load(lhsT[nl.ds(k * tile_k, tile_k), nl.ds(m * tile_m, tile_m)])
                moving = nl.load(rhs[nl.ds(k * tile_k, tile_k), nl.ds(n * tile_n, tile_n)])
                nisa.nc_matmul(accumulator, stationary, moving, accumulate=k > 0)
            result = nl.ndarray((tile_m, tile_n), dtype=lhsT.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(result, accumulator)
            nl.store(out[nl.ds(m * tile_m, tile_m), nl.ds(n * tile_n, tile_n)], value=result)
    return out


def main():
    a = torch.randn(1024, 512, dtype=torch.bfloat16, device="neuron")
    b = torch.randn(512, 1024, dtype=torch.bfloat16, device="neuron")
    out = matmul_kernel(a.T.contiguous(), b)
    expected = (a.cpu().float() @ b.cpu().float())
    print("max relative error:",
          ((out.cpu().float() - expected).abs().max() / expected.abs().max()).item())


if __name__ == "__main__":
    main()

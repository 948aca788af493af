"""RMSNorm of each row, out = a * rsqrt(mean(a^2)) * g, over row tiles of 128
partitions; the last tile is partial (250 rows: 128 + 122). The weight g is
broadcast to every partition by a matmul with a row of ones.

    python examples/nki/rmsnorm.py
"""

import torch

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_kernel(a, g):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, columns = a.shape
    # g on every partition: ones[1, 128]^T @ g[1, columns].
    ones = nl.ones((1, 128), dtype=nl.float32)
    weight_row = nl.load(g.reshape((1, columns)), dtype=nl.float32)
    weight_psum = nl.ndarray((128, columns), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(weight_psum, ones, weight_row)
    weight = nl.ndarray((128, columns), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(weight, weight_psum)
    for r in nl.affine_range((rows + 127) // 128):
        start = r * 128
        size = min(128, rows - start)
        tile = nl.load(a[nl.ds(start, size), :])
        squares = nl.ndarray((size, columns), dtype=nl.float32, buffer=nl.sbuf)
        sum_of_squares = nl.ndarray((size, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(squares, nl.square, tile, reduce_op=nl.add, reduce_res=sum_of_squares)
        inverse_rms = nl.ndarray((size, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(inverse_rms, nl.rsqrt, sum_of_squares, scale=1.0 / columns)
        normalized = nl.ndarray((size, columns), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(normalized, tile, nl.multiply, inverse_rms)
        nisa.tensor_tensor(normalized, normalized, weight[0:size, :], nl.multiply)
        nl.store(out[nl.ds(start, size), :], value=normalized)
    return out


def main():
    a = torch.randn(250, 512, device="neuron")
    g = torch.randn(512, device="neuron")
    out = rmsnorm_kernel(a, g).cpu()
    a, g = a.cpu(), g.cpu()
    expected = a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True)) * g
    print("matches:", torch.allclose(out, expected, atol=1e-4, rtol=1e-2))


if __name__ == "__main__":
    main()

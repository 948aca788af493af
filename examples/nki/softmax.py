"""Softmax of each row in bfloat16, on the Vector and Scalar engines: the row
maximum (negated) as the exponential's bias, the row sum accumulated by the
same activation, then a multiply by its reciprocal.

    python examples/nki/softmax.py
"""

import torch

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def softmax_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, columns = x.shape
    for r in nl.affine_range(rows // 128):
        rows_at = nl.ds(r * 128, 128)
        tile = nl.load(x[rows_at, :])
        negated_max = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(negated_max, nl.max, tile, axis=1, negate=True, keepdims=True)
        exponentials = nl.ndarray((128, columns), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(exponentials, nl.exp, tile, bias=negated_max, reduce_op=nl.add,
                        reduce_res=total)
        inverse = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(inverse, total)
        result = nl.ndarray((128, columns), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(result, exponentials, nl.multiply, inverse)
        nl.store(out[rows_at, :], value=result)
    return out


def main():
    x = torch.randn(512, 2048, dtype=torch.bfloat16, device="neuron")
    out = softmax_kernel(x).cpu().float()
    expected = torch.softmax(x.cpu().float(), dim=-1)
    print("max abs error:", (out - expected).abs().max().item())


if __name__ == "__main__":
    main()

"""The announcement's custom kernels: sin and cos in NKI, wrapped as PyTorch
operators with an autograd formula, on the neuron device.

    python examples/nki/sin_cos.py
"""

import torch

import nki
import nki.language as nl
from torch_neuronx import nki_op


@nki.jit
def sin_kernel(in_ptr0, out_ptr):
    input_tile = nl.load(in_ptr0[0:128])
    output_tile = nl.sin(input_tile)
    nl.store(out_ptr[0:128], value=output_tile)
    return out_ptr


@nki.jit
def cos_kernel(in_ptr0, out_ptr):
    input_tile = nl.load(in_ptr0[0:128])
    output_tile = nl.cos(input_tile)
    nl.store(out_ptr[0:128], value=output_tile)
    return out_ptr


@nki_op("mylib::pt_nki_sin", mutates_args={})
def pt_nki_sin(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    sin_kernel(x, out)
    return out


@nki_op("mylib::pt_nki_cos", mutates_args={})
def pt_nki_cos(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    cos_kernel(x, out)
    return out


def pt_sin_setup_context(ctx, inputs, output):
    (x,) = inputs
    ctx.save_for_backward(x)


def pt_nki_sin_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * pt_nki_cos(x)


pt_nki_sin.register_autograd(pt_nki_sin_backward, setup_context=pt_sin_setup_context)


# The same computation over any [rows, columns] tensor, for any elementwise
# function of nki.language (a compile-time argument): tiles of 128
# partitions and at most 512 elements of the free dimension.
@nki.jit
def elementwise_tiled_kernel(x, out, function):
    rows, columns = x.shape
    tile_columns = min(columns, 512)
    for r in nl.affine_range(rows // 128):
        for c in nl.affine_range(columns // tile_columns):
            rows_at = nl.ds(r * 128, 128)
            columns_at = nl.ds(c * tile_columns, tile_columns)
            tile = nl.load(x[rows_at, columns_at])
            nl.store(out[rows_at, columns_at], value=function(tile))


@nki_op("mylib::pt_nki_sin_tiled", mutates_args={})
def pt_nki_sin_tiled(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    elementwise_tiled_kernel(x, out, nl.sin)
    return out


@nki_op("mylib::pt_nki_cos_tiled", mutates_args={})
def pt_nki_cos_tiled(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    elementwise_tiled_kernel(x, out, nl.cos)
    return out


def _tiled_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * pt_nki_cos_tiled(x)


pt_nki_sin_tiled.register_autograd(_tiled_backward, setup_context=pt_sin_setup_context)


def main():
    x = torch.randn(128, 1, device="neuron", requires_grad=True)
    y = pt_nki_sin(x)
    y.sum().backward()
    reference = x.detach().cpu()
    print("sin matches:", torch.allclose(y.detach().cpu(), reference.sin(), atol=1e-5))
    print("grad matches cos:", torch.allclose(x.grad.cpu(), reference.cos(), atol=1e-5))
    compiled = torch.compile(lambda t: pt_nki_sin_tiled(t).sum(), backend="neuron")
    z = torch.randn(256, 1024, device="neuron", requires_grad=True)
    compiled(z).backward()
    print("compiled grad matches cos:",
          torch.allclose(z.grad.cpu(), z.detach().cpu().cos(), atol=1e-5))


if __name__ == "__main__":
    main()

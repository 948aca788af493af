"""nki.estimate: the cost model's engine placement, overlap of independent
engines and its verdict on hoisting loads out of a matmul's loops."""

import os
import sys

import pytest
import torch

import nki
import nki.isa as nisa
import nki.language as nl

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "nki"))

import matmul  # noqa: E402
import softmax  # noqa: E402

# -- nki.estimate -----------------------------------------------------------------

def matmul_naive(lhsT, rhs):
    contraction, rows = lhsT.shape
    _, columns = rhs.shape
    out = nl.ndarray((rows, columns), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(rows // 128):
        for n in nl.affine_range(columns // 512):
            accumulator = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(contraction // 128):
                stationary = nl.load(lhsT[nl.ds(k * 128, 128), nl.ds(m * 128, 128)])
                moving = nl.load(rhs[nl.ds(k * 128, 128), nl.ds(n * 512, 512)])
                nisa.nc_matmul(accumulator, stationary, moving, accumulate=k > 0)
            nl.store(out[nl.ds(m * 128, 128), nl.ds(n * 512, 512)],
                     value=nl.copy(accumulator, dtype=lhsT.dtype))
    return out


def matmul_hoisted(lhsT, rhs):
    contraction, rows = lhsT.shape
    _, columns = rhs.shape
    out = nl.ndarray((rows, columns), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    moving = [nl.load(rhs[nl.ds(k * 128, 128), :]) for k in range(contraction // 128)]
    for m in nl.affine_range(rows // 128):
        stationary = [nl.load(lhsT[nl.ds(k * 128, 128), nl.ds(m * 128, 128)])
                      for k in range(contraction // 128)]
        for n in nl.affine_range(columns // 512):
            accumulator = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(contraction // 128):
                nisa.nc_matmul(accumulator, stationary[k], moving[k][:, nl.ds(n * 512, 512)],
                               accumulate=k > 0)
            nl.store(out[nl.ds(m * 128, 128), nl.ds(n * 512, 512)],
                     value=nl.copy(accumulator, dtype=lhsT.dtype))
    return out


def test_estimate_predicts_that_hoisting_loads_out_of_a_matmuls_loops_pays():
    lhsT = torch.empty(1024, 1024, dtype=torch.bfloat16)
    rhs = torch.empty(1024, 2048, dtype=torch.bfloat16)
    naive = nki.estimate(nki.jit(matmul_naive))(lhsT, rhs)
    hoisted = nki.estimate(nki.jit(matmul_hoisted))(lhsT, rhs)
    assert hoisted.total_us < naive.total_us / 2
    assert hoisted.mfu > 2 * naive.mfu
    # Both do the same matmuls; the naive kernel moves four times the bytes.
    assert hoisted.busy_us["tensor"] == pytest.approx(naive.busy_us["tensor"])
    assert naive.hbm_bytes > 3 * hoisted.hbm_bytes
    assert "predicted" in str(hoisted) and "tensor" in str(hoisted)


def test_estimate_puts_each_instruction_on_its_engine():
    softmax_estimate = nki.estimate(softmax.softmax_kernel)(
        torch.empty(512, 2048, dtype=torch.bfloat16))
    assert softmax_estimate.busy_us["tensor"] == 0
    assert softmax_estimate.busy_us["vector"] > 0 and softmax_estimate.busy_us["scalar"] > 0
    assert softmax_estimate.mfu == 0
    matmul_estimate = nki.estimate(matmul.matmul_kernel)(
        torch.empty(512, 1024, dtype=torch.bfloat16), torch.empty(512, 1024, dtype=torch.bfloat16))
    assert matmul_estimate.busy_us["tensor"] > 0 and matmul_estimate.busy_us["scalar"] == 0


def test_estimate_overlaps_independent_engines_and_serializes_dependent_ones():
    @nki.jit
    def independent(x):
        a = nl.ndarray((128, 4096), dtype=nl.float32, buffer=nl.sbuf)
        b = nl.ndarray((128, 4096), dtype=nl.float32, buffer=nl.sbuf)
        c = nl.ndarray((128, 4096), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(a, 1.0)                          # Vector
        nisa.activation(b, nl.exp, c)                # Scalar, independent of a
        nl.store(x, value=nl.add(a[:, 0:1], b[:, 0:1]))

    @nki.jit
    def dependent(x):
        a = nl.ndarray((128, 4096), dtype=nl.float32, buffer=nl.sbuf)
        b = nl.ndarray((128, 4096), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(a, 1.0)                          # Vector
        nisa.activation(b, nl.exp, a)                # Scalar, reads a
        nl.store(x, value=b[:, 0:1])

    x = torch.empty(128, 1)
    apart = nki.estimate(independent)(x)
    chained = nki.estimate(dependent)(x)
    assert chained.total_us > apart.total_us
    work = chained.busy_us["vector"] + chained.busy_us["scalar"]
    assert chained.total_us >= work

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


# -- the instructions the legacy API and the libraries brought ------------------------

def _tensor_engine_us(kernel, *tensors):
    return nki.estimate(nki.jit(kernel))(*tensors).busy_us["tensor"]


def test_an_fp8_matmul_in_double_row_mode_takes_half_the_tensor_engines_time():
    def bf16(lhsT, rhs):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(2):
            nisa.nc_matmul(acc, nl.load(lhsT[nl.ds(k * 128, 128), :]),
                           nl.load(rhs[nl.ds(k * 128, 128), :]), accumulate=k > 0)
        nl.store(out, nl.copy(acc))
        return out

    def fp8(lhsT, rhs):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(acc, nl.load(lhsT.reshape((128, 2, 128))),
                       nl.load(rhs.reshape((128, 2, 512))),
                       perf_mode=nisa.matmul_perf_mode.double_row)
        nl.store(out, nl.copy(acc))
        return out

    wide = (torch.empty(256, 128, dtype=torch.bfloat16), torch.empty(256, 512, dtype=torch.bfloat16))
    narrow = (torch.empty(256, 128, dtype=torch.float8_e4m3fn),
              torch.empty(256, 512, dtype=torch.float8_e4m3fn))
    assert _tensor_engine_us(fp8, *narrow) == pytest.approx(_tensor_engine_us(bf16, *wide) / 2)


def test_a_scan_costs_two_vector_cycles_an_element():
    def scan(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        tile = nl.load(a)
        result = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(result, tile, tile, 0.0, nl.multiply, nl.add)
        nl.store(out, result)
        return out

    estimate = nki.estimate(nki.jit(scan))(torch.empty(128, 4096))
    assert estimate.busy_us["vector"] == pytest.approx(2 * 4096 / 0.96 / 1e3)


def test_a_partition_broadcast_costs_one_dma():
    def with_broadcast(x, row):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.add(nl.load(x), nl.load(row)))
        return out

    def without(x, row):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.add(nl.load(x), nl.load(x)))
        return out

    x, row = torch.empty(128, 512), torch.empty(1, 512)
    broadcast = nki.estimate(nki.jit(with_broadcast))(x, row)
    plain = nki.estimate(nki.jit(without))(x, row)
    assert broadcast.busy_us["dma"] > plain.busy_us["dma"]
    assert broadcast.instructions == plain.instructions + 1

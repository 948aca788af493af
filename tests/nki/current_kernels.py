"""Kernels in the current nki API: explicit destinations, slices and
nl.ds, access patterns (.ap), implicit partition broadcasts, the scan and
accumulator instructions, fp8."""

import math

import ml_dtypes
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl
from suite import case


def _rows(size, small, full):
    return small if size == "small" else full


# -- elementwise over LNC2's two instances ------------------------------------------

@nki.jit
def scaled_add(a, b, out):
    rows, width = a.shape
    half = rows // nl.num_programs()
    start = nl.program_id(0) * half
    for t in nl.affine_range(half // 128):
        lo = start + t * 128
        x = nl.ndarray((128, width), dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray((128, width), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(x, a[nl.ds(lo, 128), :])
        nisa.dma_copy(y, b[nl.ds(lo, 128), :])
        total = nl.ndarray((128, width), dtype=a.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(total, x, nl.multiply, 2.0, nl.add, y)
        nisa.dma_copy(out[nl.ds(lo, 128), :], total)


@case("current_scaled_add_lnc2", "current",
      inputs=lambda rng, size: [rng.standard_normal((_rows(size, 256, 2048), 384), np.float32),
                                rng.standard_normal((_rows(size, 256, 2048), 384), np.float32)],
      golden=lambda a, b: 2 * a + b)
def launch_scaled_add(a, b):
    out = _like(a)
    scaled_add[2](a, b, out)
    return out


def _like(array):
    import torch
    if isinstance(array, torch.Tensor):
        return torch.empty_like(array)
    return np.empty_like(array)


# -- matmul in PSUM blocks along the free dimension -------------------------------

@nki.jit
def matmul_blocked(lhs_t, rhs):
    k, m = lhs_t.shape
    _, n = rhs.shape
    out = nl.ndarray((m, n), dtype=lhs_t.dtype, buffer=nl.shared_hbm)
    blocks_n = n // 512
    for mi in nl.affine_range(m // 128):
        lhs = nl.ndarray((128, k // 128, 128), dtype=lhs_t.dtype, buffer=nl.sbuf)
        for ki in nl.affine_range(k // 128):
            nisa.dma_copy(lhs[:, ki, :], lhs_t[nl.ds(ki * 128, 128), nl.ds(mi * 128, 128)])
        for ni in nl.affine_range(blocks_n):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for ki in nl.affine_range(k // 128):
                moving = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(moving, rhs[nl.ds(ki * 128, 128), nl.ds(ni * 512, 512)])
                nisa.nc_matmul(acc, lhs[:, ki, :], moving, accumulate=ki > 0)
            result = nl.ndarray((128, 512), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(result, acc)
            nisa.dma_copy(out[nl.ds(mi * 128, 128), nl.ds(ni * 512, 512)], result)
    return out


@case("current_matmul_blocked", "current",
      inputs=lambda rng, size: [rng.standard_normal((_rows(size, 256, 1024), 256)).astype(
          ml_dtypes.bfloat16), rng.standard_normal((_rows(size, 256, 1024), 1024)).astype(
          ml_dtypes.bfloat16)],
      golden=lambda lhs_t, rhs: lhs_t.T @ rhs, rtol=2e-2, atol=5e-1)
def launch_matmul_blocked(lhs_t, rhs):
    return matmul_blocked(lhs_t, rhs)


# -- fp8 matmul: float8_e4m3fn inputs, double-row mode, bfloat16 result --------------

@nki.jit
def matmul_fp8(lhs_t, rhs):
    k, m = lhs_t.shape
    _, n = rhs.shape
    out = nl.ndarray((m, n), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    acc = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
    for ki in nl.affine_range(k // 256):
        stationary = nl.ndarray((128, 2, m), dtype=lhs_t.dtype, buffer=nl.sbuf)
        moving = nl.ndarray((128, 2, n), dtype=rhs.dtype, buffer=nl.sbuf)
        # Rows 2p and 2p + 1 of the K block go to partition p.
        nisa.dma_copy(stationary, lhs_t[nl.ds(ki * 256, 256), :].reshape((128, 2, m)))
        nisa.dma_copy(moving, rhs[nl.ds(ki * 256, 256), :].reshape((128, 2, n)))
        nisa.nc_matmul(acc, stationary, moving, accumulate=ki > 0,
                       perf_mode=nisa.matmul_perf_mode.double_row)
    result = nl.ndarray((m, n), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(result, acc)
    nisa.dma_copy(out, result)
    return out


def _fp8_inputs(rng, size):
    k = _rows(size, 256, 1024)
    return [rng.standard_normal((k, 128)).astype(ml_dtypes.float8_e4m3fn),
            rng.standard_normal((k, 512)).astype(ml_dtypes.float8_e4m3fn)]


@case("current_matmul_fp8_double_row", "current", inputs=_fp8_inputs,
      golden=lambda lhs_t, rhs: lhs_t.T @ rhs, rtol=2e-2, atol=2e-1)
def launch_matmul_fp8(lhs_t, rhs):
    return matmul_fp8(lhs_t, rhs)


# -- RMSNorm: the weight [1, H] spread over the partitions by nl.broadcast_to --------

@nki.jit
def rmsnorm(x, weight):
    rows, width = x.shape
    out = nl.ndarray((rows, width), dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.load(weight.reshape((1, width)))
    for t in nl.affine_range(math.ceil(rows / 128)):
        lo = t * 128
        count = min(128, rows - lo)
        tile = nl.load(x[lo:lo + count, :])
        squares = nl.ndarray((count, width), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((count, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(squares, nl.square, tile, reduce_op=nl.add, reduce_res=total)
        inverse = nl.ndarray((count, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(inverse, total, nl.multiply, 1.0 / width, op1=nl.add, operand1=1e-6)
        nisa.activation(inverse, nl.rsqrt, inverse)
        normalized = nl.multiply(tile, inverse)
        spread = nl.broadcast_to(g, (count, width))
        nl.store(out[lo:lo + count, :], nl.multiply(normalized, spread))
    return out


@case("current_rmsnorm_partition_broadcast", "current",
      inputs=lambda rng, size: [rng.standard_normal((_rows(size, 300, 1000), 256), np.float32),
                                rng.standard_normal(256).astype(np.float32)],
      golden=lambda x, g: x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * g,
      rtol=1e-4, atol=1e-4)
def launch_rmsnorm(x, g):
    return rmsnorm(x, g)


# -- LayerNorm with bn_stats, bn_aggr and a two-operator tensor_scalar; gamma and ---
# -- beta [1, H] meet [128, H] by implicit partition broadcasts ---------------------

@nki.jit
def layernorm(x, gamma, beta):
    rows, width = x.shape
    out = nl.ndarray((rows, width), dtype=x.dtype, buffer=nl.shared_hbm)
    scale = nl.load(gamma.reshape((1, width)))
    shift = nl.load(beta.reshape((1, width)))
    for t in nl.affine_range(rows // 128):
        tile = nl.load(x[nl.ds(t * 128, 128), :])
        stats = nl.ndarray((128, 6 * (width // 512)), dtype=nl.float32, buffer=nl.sbuf)
        for c in nl.affine_range(width // 512):
            nisa.bn_stats(stats[:, nl.ds(c * 6, 6)], tile[:, nl.ds(c * 512, 512)])
        moments = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(moments, stats)
        inverse = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(inverse, moments[:, 1:2], nl.add, 1e-5)
        nisa.activation(inverse, nl.rsqrt, inverse)
        normalized = nl.ndarray((128, width), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(normalized, tile, nl.subtract, moments[:, 0:1], op1=nl.multiply,
                           operand1=inverse)
        nl.store(out[nl.ds(t * 128, 128), :], nl.add(nl.multiply(normalized, scale), shift))
    return out


def _layernorm_golden(x, gamma, beta):
    mean = x.mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5) * gamma + beta


@case("current_layernorm_bn_stats", "current",
      inputs=lambda rng, size: [rng.standard_normal((_rows(size, 128, 512), 1024), np.float32),
                                rng.standard_normal(1024).astype(np.float32),
                                rng.standard_normal(1024).astype(np.float32)],
      golden=_layernorm_golden, rtol=1e-4, atol=1e-4)
def launch_layernorm(x, gamma, beta):
    return layernorm(x, gamma, beta)


# -- cumulative sum along rows, carried across tiles ----------------------------------

@nki.jit
def cumsum(x):
    rows, width = x.shape
    out = nl.ndarray((rows, width), dtype=x.dtype, buffer=nl.shared_hbm)
    step = 512
    for t in nl.affine_range(rows // 128):
        carry = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        for c in nl.sequential_range(width // step):
            tile = nl.load(x[nl.ds(t * 128, 128), nl.ds(c * step, step)])
            ones = nl.ones((128, step), dtype=nl.float32, buffer=nl.sbuf)
            sums = nl.ndarray((128, step), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor_scan(sums, ones, tile, carry, nl.multiply, nl.add)
            nisa.tensor_copy(carry, sums[:, step - 1:step])
            nl.store(out[nl.ds(t * 128, 128), nl.ds(c * step, step)], sums)
    return out


@case("current_cumsum_scan", "current",
      inputs=lambda rng, size: [rng.standard_normal((128, _rows(size, 1024, 4096)), np.float32)],
      golden=lambda x: np.cumsum(x, axis=1), rtol=1e-4, atol=1e-3)
def launch_cumsum(x):
    return cumsum(x)


# -- cross-entropy of each row against its label -------------------------------------

@nki.jit
def cross_entropy(logits, labels):
    """-log softmax(logits)[label] per row: logsumexp minus the label's
    logit, the label picked by an iota compared with it."""
    rows, classes = logits.shape
    out = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    positions = nl.ndarray((128, classes), dtype=nl.float32, buffer=nl.sbuf)
    nisa.iota(positions, [[1, classes]])
    for t in nl.affine_range(rows // 128):
        x = nl.load(logits[nl.ds(t * 128, 128), :])
        label = nl.load(labels[nl.ds(t * 128, 128)], dtype=nl.float32)
        negated_max = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(negated_max, nl.maximum, x, axis=1, negate=True, keepdims=True)
        exps = nl.ndarray((128, classes), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(exps, nl.exp, x, bias=negated_max, reduce_op=nl.add, reduce_res=total)
        log_total = nl.log(total)
        hit = nl.ndarray((128, classes), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(hit, positions, nl.equal, label)
        picked = nl.ndarray((128, classes), dtype=nl.float32, buffer=nl.sbuf)
        target = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(picked, hit, x, nl.multiply)
        nisa.tensor_reduce(target, nl.add, picked, axis=1, keepdims=True)
        # loss = log(sum) - (target - max) = log(sum) - target + max
        loss = nl.subtract(nl.subtract(log_total, target), negated_max)
        nl.store(out[nl.ds(t * 128, 128), :], loss)
    return out


def _cross_entropy_golden(logits, labels):
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -log_softmax[np.arange(len(labels)), labels.astype(np.int64)][:, None]


@case("current_cross_entropy", "current",
      inputs=lambda rng, size: [rng.standard_normal((_rows(size, 128, 512), 1000), np.float32),
                                rng.integers(0, 1000, _rows(size, 128, 512)).astype(np.int32)],
      golden=_cross_entropy_golden, rtol=1e-4, atol=1e-4)
def launch_cross_entropy(logits, labels):
    return cross_entropy(logits, labels)


# -- max pooling through access patterns ----------------------------------------------

@nki.jit
def pool_rows(x):
    """The maximum of each pair of neighbouring columns, read by an access
    pattern that walks the pairs: [[width, P], [2, width // 2], [1, 2]]."""
    rows, width = x.shape
    out = nl.ndarray((rows, width // 2), dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.load(x)
    pairs = tile.ap([[width, rows], [2, width // 2], [1, 2]])
    result = nl.ndarray((rows, width // 2), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_reduce(result, nl.maximum, pairs, axis=2)
    nl.store(out, result)
    return out


@case("current_pool_access_pattern", "current",
      inputs=lambda rng, size: [rng.standard_normal((128, _rows(size, 256, 2048)), np.float32)],
      golden=lambda x: x.reshape(128, -1, 2).max(axis=2))
def launch_pool_rows(x):
    return pool_rows(x)


# -- a mixture of experts' router: softmax over the top-2 experts --------------------

@nki.jit
def router_top2(logits):
    tokens, experts = logits.shape
    weights = nl.ndarray((tokens, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    indices = nl.ndarray((tokens, 2), dtype=nl.uint32, buffer=nl.shared_hbm)
    for t in nl.affine_range(tokens // 128):
        x = nl.load(logits[nl.ds(t * 128, 128), :])
        top = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.max8(top, x)
        where = nl.ndarray((128, 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.nc_find_index8(where, x, top)
        best = nl.softmax(top[:, 0:2], axis=1)
        nl.store(weights[nl.ds(t * 128, 128), :], best)
        nl.store(indices[nl.ds(t * 128, 128), :], where[:, 0:2])
    return weights, indices


def _router_golden(logits):
    order = np.argsort(-logits, axis=1, kind="stable")[:, :2]
    top = np.take_along_axis(logits, order, axis=1)
    return _softmax(top), order.astype(np.float64)


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@case("current_moe_router_top2", "current",
      inputs=lambda rng, size: [rng.standard_normal((_rows(size, 128, 1024), 64), np.float32)],
      golden=_router_golden, rtol=1e-5, atol=1e-6)
def launch_router(logits):
    return router_top2(logits)

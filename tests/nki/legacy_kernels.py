"""Kernels in the legacy neuronxcc.nki API: index expressions (nl.arange,
nl.mgrid), masks, nl.par_dim block tiles, instructions that return their
results, NumPy dtypes and operators."""

import math

import ml_dtypes
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from suite import case


def _rows(size, small, full):
    return small if size == "small" else full


# -- elementwise over a launch grid ---------------------------------------------

@nki.jit
def add_grid(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    row = nl.program_id(0) * 128
    column = nl.program_id(1) * 256
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(256)[None, :]
    total = nl.add(nl.load(a[row + i_p, column + i_f]), nl.load(b[row + i_p, column + i_f]))
    nl.store(out[row + i_p, column + i_f], value=total)
    return out


@case("legacy_add_spmd_grid", "legacy",
      inputs=lambda rng, size: [rng.standard_normal((_rows(size, 256, 1024), 512), np.float32),
                                rng.standard_normal((_rows(size, 256, 1024), 512), np.float32)],
      golden=lambda a, b: a + b)
def launch_add_grid(a, b):
    return add_grid[a.shape[0] // 128, a.shape[1] // 256](a, b)


# -- transpose of each partition's matrix through index expressions ------------

@nki.jit
def transpose_rows(x, rows, columns):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.load(x)
    flipped = nl.ndarray(tile.shape, dtype=x.dtype, buffer=nl.sbuf)
    i_p = nl.arange(x.shape[0])[:, None, None]
    i_r = nl.arange(rows)[None, :, None]
    i_c = nl.arange(columns)[None, None, :]
    flipped[i_p, i_c * rows + i_r] = nl.copy(tile[i_p, i_r * columns + i_c])
    nl.store(out, value=flipped)
    return out


@case("legacy_transpose_within_partitions", "legacy",
      inputs=lambda rng, size: [rng.standard_normal((128, 12 * _rows(size, 8, 64)), np.float32)],
      golden=lambda x: x.reshape(128, 12, -1).transpose(0, 2, 1).reshape(128, -1))
def launch_transpose(x):
    return transpose_rows(x, 12, x.shape[1] // 12)


# -- max pooling with a five-dimensional mgrid -------------------------------------

@nki.jit
def max_pool(x):
    # Windows of 3 rows by 4 columns.
    channels, height, width = x.shape
    out = nl.ndarray((channels, height // 3, width // 4), dtype=x.dtype, buffer=nl.shared_hbm)
    c, h, dh, w, dw = nl.mgrid[0:channels, 0:height // 3, 0:3, 0:width // 4, 0:4]
    tile = nl.load(x)
    nl.store(out, value=nl.max(tile[c, h * 3 + dh, w * 4 + dw], axis=[2, 4]))
    return out


@case("legacy_max_pool_mgrid", "legacy",
      inputs=lambda rng, size: [rng.standard_normal((_rows(size, 16, 128), 12, 16), np.float32)],
      golden=lambda x: x.reshape(x.shape[0], 4, 3, 4, 4).max(axis=(2, 4)))
def launch_max_pool(x):
    return max_pool(x)


# -- matmul: one tile, then tiled with PSUM accumulation, then hoisted loads -------

@nki.jit
def matmul_one_tile(lhs_t, rhs):
    k, m = lhs_t.shape
    _, n = rhs.shape
    out = nl.ndarray((m, n), dtype=lhs_t.dtype, buffer=nl.shared_hbm)
    i_k, i_m = nl.mgrid[0:k, 0:m]
    j_k, j_n = nl.mgrid[0:k, 0:n]
    product = nl.matmul(nl.load(lhs_t[i_k, i_m]), nl.load(rhs[j_k, j_n]), transpose_x=True)
    o_m, o_n = nl.mgrid[0:m, 0:n]
    nl.store(out[o_m, o_n], value=nl.copy(product, dtype=out.dtype))
    return out


@case("legacy_matmul_one_tile", "legacy",
      inputs=lambda rng, size: [rng.standard_normal((128, 64), np.float32),
                                rng.standard_normal((128, 512), np.float32)],
      golden=lambda lhs_t, rhs: lhs_t.T @ rhs, rtol=1e-4, atol=1e-4)
def launch_matmul_one_tile(lhs_t, rhs):
    return matmul_one_tile(lhs_t, rhs)


@nki.jit
def matmul_tiled(lhs_t, rhs):
    k, m = lhs_t.shape
    _, n = rhs.shape
    out = nl.ndarray((m, n), dtype=lhs_t.dtype, buffer=nl.shared_hbm)
    for mi in nl.affine_range(m // 128):
        for ni in nl.affine_range(n // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for ki in nl.affine_range(k // 128):
                a = nl.ndarray((128, 128), dtype=lhs_t.dtype, buffer=nl.sbuf)
                b = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                a[...] = nl.load(lhs_t[ki * 128:(ki + 1) * 128, mi * 128:(mi + 1) * 128])
                b[...] = nl.load(rhs[ki * 128:(ki + 1) * 128, ni * 512:(ni + 1) * 512])
                acc += nl.matmul(a[...], b[...], transpose_x=True)
            nl.store(out[mi * 128:(mi + 1) * 128, ni * 512:(ni + 1) * 512],
                     value=nl.copy(acc, dtype=out.dtype))
    return out


def _bf16_pair(rng, k, m, n):
    return [rng.standard_normal((k, m)).astype(ml_dtypes.bfloat16),
            rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16)]


@case("legacy_matmul_tiled_psum_accumulate", "legacy",
      inputs=lambda rng, size: _bf16_pair(rng, _rows(size, 256, 1024), 256, 1024),
      golden=lambda lhs_t, rhs: lhs_t.T @ rhs, rtol=2e-2, atol=5e-1)
def launch_matmul_tiled(lhs_t, rhs):
    return matmul_tiled(lhs_t, rhs)


@nki.jit
def matmul_hoisted(lhs_t, rhs):
    k, m = lhs_t.shape
    _, n = rhs.shape
    out = nl.ndarray((m, n), dtype=lhs_t.dtype, buffer=nl.shared_hbm)
    i_lhs = nl.mgrid[0:128, 0:128]
    i_rhs = nl.mgrid[0:128, 0:512]
    for mi in nl.affine_range(m // 128):
        # Every K block of this column of lhs_t, loaded once.
        lhs_blocks = nl.ndarray((k // 128, nl.par_dim(128), 128), dtype=lhs_t.dtype,
                                buffer=nl.sbuf)
        for ki in nl.affine_range(k // 128):
            lhs_blocks[ki, i_lhs.p, i_lhs.x] = nl.load(lhs_t[ki * 128 + i_lhs.p,
                                                               mi * 128 + i_lhs.x])
        for ni in nl.affine_range(n // 512):
            rhs_blocks = nl.ndarray((k // 128, nl.par_dim(128), 512), dtype=rhs.dtype,
                                    buffer=nl.sbuf)
            for ki in nl.affine_range(k // 128):
                rhs_blocks[ki, i_rhs.p, i_rhs.x] = nl.load(rhs[ki * 128 + i_rhs.p,
                                                               ni * 512 + i_rhs.x])
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for ki in nl.affine_range(k // 128):
                acc += nisa.nc_matmul(lhs_blocks[ki, i_lhs.p, i_lhs.x],
                                      rhs_blocks[ki, i_rhs.p, i_rhs.x])
            result = nl.copy(acc, dtype=out.dtype)
            nl.store(out[mi * 128 + i_lhs.p[:, 0:1], ni * 512 + i_rhs.x[0:1, :]],
                     value=result)
    return out


@case("legacy_matmul_hoisted_block_tiles", "legacy",
      inputs=lambda rng, size: _bf16_pair(rng, _rows(size, 256, 1024), 256, 1024),
      golden=lambda lhs_t, rhs: lhs_t.T @ rhs, rtol=2e-2, atol=5e-1)
def launch_matmul_hoisted(lhs_t, rhs):
    return matmul_hoisted(lhs_t, rhs)


# -- RMSNorm with masks and the weight broadcast across partitions -----------------

@nki.jit
def rmsnorm(a, g):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, width = a.shape
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(width)[None, :]
    weight = nl.load(g.reshape((1, width))[nl.arange(1)[:, None], i_f])
    for t in nl.affine_range(math.ceil(rows / 128)):
        valid = t * 128 + i_p < rows
        tile = nl.load(a[t * 128 + i_p, i_f], mask=valid)
        mean_square = nl.sum(nl.square(tile), axis=[1]) / width
        normalized = nl.multiply(tile, nl.rsqrt(mean_square + 1e-6))
        scaled = nl.multiply(normalized, weight.broadcast_to((128, width)), mask=valid)
        nl.store(out[t * 128 + i_p, i_f], value=scaled, mask=valid)
    return out


def _rmsnorm_golden(a, g):
    return a / np.sqrt((a * a).mean(axis=1, keepdims=True) + 1e-6) * g


@case("legacy_rmsnorm_masked_partition_broadcast", "legacy",
      inputs=lambda rng, size: [rng.standard_normal((_rows(size, 200, 1000), 512), np.float32),
                                rng.standard_normal(512).astype(np.float32)],
      golden=_rmsnorm_golden, rtol=1e-4, atol=1e-4)
def launch_rmsnorm(a, g):
    return rmsnorm(a, g)


# -- LayerNorm from bn_stats and bn_aggr --------------------------------------------

@nki.jit
def layernorm(x, gamma, beta, epsilon):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, width = x.shape
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(width)[None, :]
    one = nl.arange(1)[:, None]
    scale = nl.load(gamma.reshape((1, width))[one, i_f]).broadcast_to((128, width))
    shift = nl.load(beta.reshape((1, width))[one, i_f]).broadcast_to((128, width))
    chunks = math.ceil(width / 512)
    i_chunk = nl.arange(512)[None, :]
    i_six = nl.arange(6)[None, :]
    for t in nl.affine_range(math.ceil(rows / 128)):
        valid = t * 128 + i_p < rows
        tile = nl.load(x[t * 128 + i_p, i_f], mask=valid)
        stats = nl.ndarray((128, 6 * chunks), dtype=np.float32)
        for c in nl.affine_range(chunks):
            stats[i_p, c * 6 + i_six] = nisa.bn_stats(tile[i_p, c * 512 + i_chunk],
                                                      mask=c * 512 + i_chunk < width,
                                                      dtype=np.float32)
        moments = nisa.bn_aggr(stats[i_p, nl.arange(6 * chunks)[None, :]])
        inverse_std = nl.rsqrt(moments[i_p, 1] + epsilon)
        normalized = nisa.tensor_scalar(data=tile, op0=np.subtract, operand0=moments[i_p, 0],
                                        op1=np.multiply, operand1=inverse_std)
        nl.store(out[t * 128 + i_p, i_f], value=normalized * scale + shift, mask=valid)
    return out


def _layernorm_golden(x, gamma, beta):
    mean = x.mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5) * gamma + beta


@case("legacy_layernorm_bn_stats", "legacy",
      inputs=lambda rng, size: [rng.standard_normal((_rows(size, 160, 600), 768), np.float32),
                                rng.standard_normal(768).astype(np.float32),
                                rng.standard_normal(768).astype(np.float32)],
      golden=_layernorm_golden, rtol=1e-4, atol=1e-4)
def launch_layernorm(x, gamma, beta):
    return layernorm(x, gamma, beta, 1e-5)


# -- Mamba's selective scan -------------------------------------------------------

@nki.jit
def selective_scan(delta, u, a, b, c):
    batch, channels, length = delta.shape
    _, states = a.shape
    out = nl.ndarray((batch, channels, length), dtype=delta.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(batch):
        for t in nl.affine_range(channels // 128):
            lo = t * 128
            delta_t = nl.load(delta[i, lo:lo + 128, 0:length])
            u_t = nl.load(u[i, lo:lo + 128, 0:length])
            total = nl.zeros((128, length), dtype=np.float32)
            for s in nl.sequential_range(states):
                decay = nisa.activation(op=nl.exp, data=delta_t, scale=nl.load(a[lo:lo + 128, s]))
                b_row = nl.load(b[i, s:s + 1, 0:length])
                drive = nisa.tensor_tensor(nisa.tensor_tensor(delta_t, u_t, op=nl.multiply),
                                           b_row.broadcast_to((128, length)), op=nl.multiply)
                state = nisa.tensor_tensor_scan(decay, drive, initial=0, op0=np.multiply,
                                                op1=np.add)
                c_row = nl.load(c[i, s:s + 1, 0:length])
                total += nisa.tensor_tensor(state, c_row.broadcast_to((128, length)),
                                            op=nl.multiply)
            nl.store(out[i, lo:lo + 128, 0:length], total)
    return out


def _scan_golden(delta, u, a, b, c):
    batch, channels, length = delta.shape
    out = np.zeros_like(delta)
    for s in range(a.shape[1]):
        decay = np.exp(delta * a[None, :, s:s + 1])
        drive = delta * u * b[:, s:s + 1, :]
        state = np.zeros((batch, channels))
        for i in range(length):
            state = decay[:, :, i] * state + drive[:, :, i]
            out[:, :, i] += state * c[:, s, i][:, None]
    return out


@case("legacy_mamba_selective_scan", "legacy",
      inputs=lambda rng, size: [
          (0.1 * rng.random((1, 128, _rows(size, 64, 512)))).astype(np.float32),
          rng.standard_normal((1, 128, _rows(size, 64, 512))).astype(np.float32),
          -rng.random((128, _rows(size, 4, 16))).astype(np.float32),
          rng.standard_normal((1, _rows(size, 4, 16), _rows(size, 64, 512))).astype(np.float32),
          rng.standard_normal((1, _rows(size, 4, 16), _rows(size, 64, 512))).astype(np.float32)],
      golden=_scan_golden, rtol=1e-4, atol=1e-4)
def launch_selective_scan(delta, u, a, b, c):
    return selective_scan(delta, u, a, b, c)

"""Attention kernels in the legacy neuronxcc.nki API: a row softmax under
masks, Stable Diffusion's self-attention with a small head, and causal
attention scores masked by affine_select."""

import math

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from suite import case


def _softmax(x, axis=-1):
    shifted = np.exp(x - x.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


# -- softmax of rows, the last tile partial --------------------------------------

@nki.jit
def row_softmax(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows, width = x.shape
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(width)[None, :]
    for t in nl.affine_range(math.ceil(rows / 128)):
        valid = t * 128 + i_p < rows
        tile = nl.load(x[t * 128 + i_p, i_f], mask=valid)
        negated_max = nisa.tensor_reduce(np.max, data=tile, axis=(1,), negate=True, mask=valid)
        total = nl.ndarray((128, 1), dtype=np.float32)
        exps = nisa.activation(op=nl.exp, data=tile, bias=negated_max, reduce_op=np.add,
                               reduce_res=total, mask=valid)
        result = nl.multiply(exps, nl.reciprocal(total, mask=valid), mask=valid)
        nl.store(out[t * 128 + i_p, i_f], value=result, mask=valid)
    return out


@case("legacy_softmax_masked_rows", "legacy",
      inputs=lambda rng, size: [rng.standard_normal((300 if size == "small" else 1000, 256),
                                                    np.float32)],
      golden=_softmax, rtol=1e-4, atol=1e-6)
def launch_softmax(x):
    return row_softmax(x)


# -- Stable Diffusion's self-attention, head size 64 -------------------------------

@nki.jit
def sd_attention(q_t, k_t, v):
    """softmax(q k^T / sqrt(d)) v for q_t, k_t [d, S] (transposed) and v
    [S, d]; S a multiple of 128."""
    d, seq = q_t.shape
    out = nl.ndarray((seq, d), dtype=q_t.dtype, buffer=nl.shared_hbm)
    scale = 1.0 / math.sqrt(d)
    i_d = nl.arange(d)[:, None]
    i_s = nl.arange(seq)[None, :]
    keys = nl.load(k_t[i_d, i_s])
    values = nl.ndarray((seq // 128, nl.par_dim(128), d), dtype=v.dtype)
    i_row = nl.arange(128)[:, None]
    i_col = nl.arange(d)[None, :]
    for j in nl.affine_range(seq // 128):
        values[j, i_row, i_col] = nl.load(v[j * 128 + i_row, i_col])
    for i in nl.affine_range(seq // 128):
        queries = nl.load(q_t[i_d, i * 128 + nl.arange(128)[None, :]])
        scores = nl.ndarray((128, seq), dtype=np.float32)
        for j in nl.affine_range(seq // 512 if seq >= 512 else 1):
            width = min(512, seq)
            block = nisa.nc_matmul(queries, keys[i_d, j * width + nl.arange(width)[None, :]])
            scores[i_row, j * width + nl.arange(width)[None, :]] = nisa.tensor_copy(block)
        negated_max = nisa.tensor_reduce(np.max, data=scores, axis=(1,), negate=True)
        negated_max = nl.multiply(negated_max, scale)
        total = nl.ndarray((128, 1), dtype=np.float32)
        probabilities = nisa.activation(op=nl.exp, data=scores, bias=negated_max, scale=scale,
                                        reduce_op=np.add, reduce_res=total)
        result = nl.zeros((128, d), dtype=np.float32, buffer=nl.psum)
        for j in nl.affine_range(seq // 128):
            block_t = nisa.nc_transpose(probabilities[i_row, j * 128 + nl.arange(128)[None, :]])
            result += nisa.nc_matmul(nl.copy(block_t, dtype=v.dtype), values[j, i_row, i_col])
        normalized = nl.multiply(result, nl.reciprocal(total))
        nl.store(out[i * 128 + i_row, i_col], value=normalized)
    return out


def _attention_golden(q_t, k_t, v):
    scores = q_t.T @ k_t / math.sqrt(q_t.shape[0])
    return _softmax(scores) @ v


@case("legacy_sd_attention_small_head", "legacy",
      inputs=lambda rng, size: [rng.standard_normal((64, 256 if size == "small" else 1024),
                                                    np.float32) for _ in range(2)] +
      [rng.standard_normal((256 if size == "small" else 1024, 64), np.float32)],
      golden=_attention_golden, rtol=2e-3, atol=2e-3)
def launch_sd_attention(q_t, k_t, v):
    return sd_attention(q_t, k_t, v)


# -- causal scores: the upper triangle masked by affine_select -----------------------

@nki.jit
def causal_scores(q_t, k_t):
    """q k^T for q_t, k_t [d, 128], -inf-like (fp32's lowest) above the
    diagonal."""
    d, seq = q_t.shape
    out = nl.ndarray((seq, seq), dtype=np.float32, buffer=nl.shared_hbm)
    scores = nl.copy(nisa.nc_matmul(nl.load(q_t), nl.load(k_t)))
    i_q, i_k = nl.mgrid[0:seq, 0:seq]
    masked = nisa.affine_select(pred=(i_q - i_k >= 0), on_true_tile=scores,
                                on_false_value=nisa.fp32.min)
    nl.store(out, value=masked)
    return out


def _causal_golden(q_t, k_t):
    scores = q_t.T @ k_t
    return np.where(np.tril(np.ones_like(scores)) > 0, scores, np.finfo(np.float32).min)


@case("legacy_causal_mask_affine_select", "legacy",
      inputs=lambda rng, size: [rng.standard_normal((32, 128), np.float32) for _ in range(2)],
      golden=_causal_golden, rtol=1e-4, atol=1e-4)
def launch_causal(q_t, k_t):
    return causal_scores(q_t, k_t)

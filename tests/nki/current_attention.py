"""Flash attention in the current nki API: the forward pass with an online
softmax over key blocks (returning the log-sum-exp for the backward), and
the backward pass recomputing the probabilities from it."""

import math

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl
from suite import case


@nki.jit
def flash_forward(q_t, k_t, v):
    """out = softmax(q k^T / sqrt(d)) v and lse = the rows' log-sum-exp of
    the scaled scores; q_t, k_t [d, S], v [S, d]."""
    d, seq = q_t.shape
    out = nl.ndarray((seq, d), dtype=q_t.dtype, buffer=nl.shared_hbm)
    lse = nl.ndarray((seq, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    scale = 1.0 / math.sqrt(d)
    block = 128
    for i in nl.affine_range(seq // 128):
        q = nl.load(q_t[:, nl.ds(i * 128, 128)])
        running_max = nl.full((128, 1), -3.0e38, dtype=nl.float32, buffer=nl.sbuf)
        running_sum = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        acc = nl.zeros((128, d), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.sequential_range(seq // block):
            keys = nl.load(k_t[:, nl.ds(j * block, block)])
            values = nl.load(v[nl.ds(j * block, block), :])
            scores_psum = nl.ndarray((128, block), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(scores_psum, q, keys)
            scores = nl.ndarray((128, block), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(scores, scores_psum, nl.multiply, scale)
            block_max = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_reduce(block_max, nl.maximum, scores, axis=1, keepdims=True)
            new_max = nl.maximum(running_max, block_max)
            negated = nl.multiply(new_max, -1.0)
            probabilities = nl.ndarray((128, block), dtype=nl.float32, buffer=nl.sbuf)
            row_sum = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(probabilities, nl.exp, scores, bias=negated, reduce_op=nl.add,
                            reduce_res=row_sum)
            correction = nl.exp(nl.subtract(running_max, new_max))
            nisa.scalar_tensor_tensor(running_sum, running_sum, nl.multiply, correction, nl.add,
                                      row_sum)
            nisa.tensor_scalar(acc, acc, nl.multiply, correction)
            probabilities_t = nl.ndarray((block, 128), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_transpose(probabilities_t, probabilities)
            stationary = nl.ndarray((block, 128), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(stationary, probabilities_t)
            weighted = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(weighted, stationary, values)
            nisa.tensor_tensor(acc, acc, weighted, nl.add)
            nisa.tensor_copy(running_max, new_max)
        result = nl.ndarray((128, d), dtype=out.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(result, acc, nl.divide, running_sum)
        nl.store(out[nl.ds(i * 128, 128), :], result)
        nl.store(lse[nl.ds(i * 128, 128), :], nl.add(nl.log(running_sum), running_max))
    return out, lse


def _scores(q_t, k_t):
    return q_t.T @ k_t / math.sqrt(q_t.shape[0])


def _forward_golden(q_t, k_t, v):
    scores = _scores(q_t, k_t)
    top = scores.max(axis=1, keepdims=True)
    lse = top + np.log(np.exp(scores - top).sum(axis=1, keepdims=True))
    return np.exp(scores - lse) @ v, lse


def _inputs(rng, size, count):
    seq = 256 if size == "small" else 1024
    return [rng.standard_normal((64, seq), np.float32) for _ in range(count)]


@case("current_flash_attention_forward", "current",
      inputs=lambda rng, size: _inputs(rng, size, 2) +
      [rng.standard_normal((256 if size == "small" else 1024, 64), np.float32)],
      golden=_forward_golden, rtol=2e-3, atol=2e-3)
def launch_forward(q_t, k_t, v):
    return flash_forward(q_t, k_t, v)


@nki.jit
def flash_backward(q_t, k_t, v_t, do_t, q, k, o, do, lse):
    """dq, dk, dv of attention (scale 1/sqrt(d)); the *_t inputs are the
    [d, S] layouts, the others [S, d]; lse [S, 1] from the forward."""
    d, seq = q_t.shape
    scale = 1.0 / math.sqrt(d)
    dq = nl.ndarray((seq, d), dtype=nl.float32, buffer=nl.shared_hbm)
    dk = nl.ndarray((seq, d), dtype=nl.float32, buffer=nl.shared_hbm)
    dv = nl.ndarray((seq, d), dtype=nl.float32, buffer=nl.shared_hbm)
    blocks = seq // 128
    dk_acc = nl.zeros((128, blocks, d), dtype=nl.float32, buffer=nl.sbuf)
    dv_acc = nl.zeros((128, blocks, d), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.sequential_range(blocks):
        rows = nl.ds(i * 128, 128)
        q_i = nl.load(q_t[:, rows])
        do_i_t = nl.load(do_t[:, rows])
        do_i = nl.load(do[rows, :])
        q_rows = nl.load(q[rows, :])
        # D = rowsum(do * o), the softmax gradient's correction.
        correction = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        products = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(products, do_i, nl.load(o[rows, :]), nl.multiply)
        nisa.tensor_reduce(correction, nl.add, products, axis=1, keepdims=True)
        negated_lse = nl.multiply(nl.load(lse[rows, :]), -1.0)
        dq_acc = nl.zeros((128, d), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.sequential_range(blocks):
            keys = nl.ds(j * 128, 128)
            scores = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(scores, q_i, nl.load(k_t[:, keys]))
            p = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(p, nl.exp, scores, bias=negated_lse, scale=scale)
            # dV[keys] += p^T do
            dv_block = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dv_block, p, do_i)
            nisa.tensor_tensor(dv_acc[:, j, :], dv_acc[:, j, :], dv_block, nl.add)
            # dP = do v^T, dS = p * (dP - D)
            dp = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dp, do_i_t, nl.load(v_t[:, keys]))
            ds = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(ds, dp, nl.subtract, correction)
            nisa.tensor_tensor(ds, ds, p, nl.multiply)
            # dK[keys] += dS^T q * scale
            dk_block = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dk_block, ds, q_rows)
            nisa.scalar_tensor_tensor(dk_acc[:, j, :], dk_block, nl.multiply, scale, nl.add,
                                      dk_acc[:, j, :])
            # dQ += dS k * scale (dS^T as stationary)
            ds_t_psum = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_transpose(ds_t_psum, ds)
            ds_t = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(ds_t, ds_t_psum)
            dq_block = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dq_block, ds_t, nl.load(k[keys, :]))
            nisa.scalar_tensor_tensor(dq_acc, dq_block, nl.multiply, scale, nl.add, dq_acc)
        nl.store(dq[rows, :], dq_acc)
    for j in nl.affine_range(blocks):
        nl.store(dk[nl.ds(j * 128, 128), :], dk_acc[:, j, :])
        nl.store(dv[nl.ds(j * 128, 128), :], dv_acc[:, j, :])
    return dq, dk, dv


def _backward_inputs(rng, size):
    seq = 256 if size == "small" else 512
    q, k, v, do = (rng.standard_normal((seq, 64)).astype(np.float32) for _ in range(4))
    o, lse = _forward_golden(q.T.astype(np.float64), k.T.astype(np.float64), v)
    return [q.T.copy(), k.T.copy(), v.T.copy(), do.T.copy(), q, k, o.astype(np.float32), do,
            lse.astype(np.float32)]


def _backward_golden(q_t, k_t, v_t, do_t, q, k, o, do, lse):
    scale = 1.0 / math.sqrt(q.shape[1])
    p = np.exp(q @ k.T * scale - lse)
    dv = p.T @ do
    dp = do @ v_t
    ds = p * (dp - (do * o).sum(axis=1, keepdims=True))
    return ds @ k * scale, ds.T @ q * scale, dv


@case("current_flash_attention_backward", "current", inputs=_backward_inputs,
      golden=_backward_golden, rtol=2e-3, atol=2e-3)
def launch_backward(*tensors):
    return flash_backward(*tensors)

"""Reference math (float64, on the CPU) and drivers shared by the legacy
and current versions of a tutorial."""

import torch

from harness import check


def uniform(shape, low=0.0, high=1.0, dtype=torch.float32):
    """Seeded (run_case seeds torch) uniform inputs in [low, high)."""
    return (torch.rand(shape, dtype=torch.float64) * (high - low) + low).to(dtype)


def attention(q, k, v, scale, causal=False):
    """softmax(scale * q @ k^T) @ v over the last two dimensions, with q
    [..., Sq, d], k and v [..., Sk, d]; returns (output, logsumexp [..., Sq])."""
    scores = scale * q.double() @ k.double().transpose(-1, -2)
    if causal:
        sq, sk = scores.shape[-2:]
        above = torch.ones(sq, sk, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(above, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v.double(), torch.logsumexp(scores, dim=-1)


def attention_grads(q, k, v, dy, scale, causal=False):
    """(dq, dk, dv) of attention(q, k, v) for the output gradient dy."""
    q, k, v = (t.double().requires_grad_() for t in (q, k, v))
    out, _ = attention(q, k, v, scale, causal)
    out.backward(dy.double())
    return q.grad, k.grad, v.grad


def mamba_scan(delta, u, A, B, C):
    """The selective scan of Mamba (the fused_mamba tutorial's kernels):
    h[t] = exp(delta[t] * A) * h[t-1] + delta[t] * u[t] * B[t];
    y[t] = sum over states of C[t] * h[t]. delta, u [batch, channels, seq];
    A [channels, states]; B, C [batch, states, seq]."""
    delta, u, A, B, C = (t.double() for t in (delta, u, A, B, C))
    decay = torch.exp(delta[:, :, None, :] * A[None, :, :, None])   # [b, c, n, t]
    drive = (delta * u)[:, :, None, :] * B[:, None, :, :]
    state = torch.zeros(decay.shape[:-1], dtype=torch.float64)
    out = torch.empty_like(delta)
    for t in range(delta.shape[-1]):
        state = decay[..., t] * state + drive[..., t]
        out[..., t] = (state * C[:, None, :, t]).sum(-1)
    return out


def matmul_driver(kernel_name, m, k, n):
    """The matrix multiplication tutorial's check: lhs [m, k] and rhs [k, n]
    in bfloat16, the kernel given lhs.T (a view, as the tutorial passes it)."""

    def driver(module, run):
        lhs, rhs = uniform((m, k), dtype=torch.bfloat16), uniform((k, n), dtype=torch.bfloat16)
        out = run.kernel(getattr(module, kernel_name), lhs.T, rhs)
        golden = (lhs.double() @ rhs.double()).to(torch.bfloat16)
        return [check("result", out, golden)]

    return driver


def mamba_driver(kernel_name, batch=1, channels=256, seq_len=1024, states=8):
    """The fused Mamba tutorial's check, on inputs shaped as in Mamba: delta
    a softplus output (small, positive), A negative."""

    def driver(module, run):
        delta = uniform((batch, channels, seq_len), 0.0, 0.2)
        u = torch.randn(batch, channels, seq_len)
        A = -uniform((channels, states), 0.5, 2.0)
        B, C = torch.randn(batch, states, seq_len), torch.randn(batch, states, seq_len)
        out = run.kernel(getattr(module, kernel_name), delta, u, A, B, C)
        return [check("output", out, mamba_scan(delta, u, A, B, C), rtol=1e-3, atol=1e-3)]

    return driver

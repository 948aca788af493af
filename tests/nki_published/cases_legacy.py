"""Cases for kernels published in the legacy namespace (`neuronxcc.nki`):
the Neuron SDK 2.26 documentation's examples (neuron-sdk-legacy), the
nki-samples tutorials, and nki-samples' reference kernels (removed in
c4b806e; nki-samples-reference). Each driver feeds the kernel inputs shaped
as its docstring says and checks what it computes against float64 math."""

import torch
import torch.nn.functional as F

from common import attention, attention_grads, mamba_driver, matmul_driver, uniform
from harness import case, check

SDK = "general/nki/examples"
TUTORIALS = "src/nki_samples/tutorials"
MIXED_PRECISION = {"rtol": 0.0, "atol": 1e-2}  # bfloat16 matmuls, as AWS's own tests allow


def _t(x):
    return x.transpose(-1, -2)


@case("legacy/getting_started_add", "legacy", "neuron-sdk-legacy",
      "getting_started_baremetal", SDK)
def getting_started_add(module, run):
    a, b = uniform((128, 512), dtype=torch.float16), uniform((128, 512), dtype=torch.float16)
    out = run.kernel(module.nki_tensor_add_kernel, a, b)
    return [check("c", out, (a.double() + b.double()).half())]


def _tensor_add(function_name, shape):
    def driver(module, run):
        a, b = uniform(shape, dtype=torch.float16), uniform(shape, dtype=torch.float16)
        out = run.host(getattr(module, function_name), a, b)
        return [check("c", out, (a.double() + b.double()).half())]

    return driver


case("legacy/spmd_tensor_add", "legacy", "neuron-sdk-legacy",
     "spmd_tensor_addition_nki_kernels", f"{SDK}/tensor_addition")(
    _tensor_add("nki_tensor_add", (256, 1024)))
case("legacy/spmd_multiple_nc_tensor_add", "legacy", "neuron-sdk-legacy",
     "spmd_multiple_nc_tensor_addition_nki_kernels", f"{SDK}/tensor_addition")(
    _tensor_add("nki_tensor_add_nc2", (512, 1024)))
case("legacy/tiled_tensor_add", "legacy", "nki-samples",
     "tensor_addition_nki_kernels", f"{TUTORIALS}/tensor_addition")(
    _tensor_add("nki_tensor_add", (256, 1024)))


@case("legacy/transpose2d", "legacy", "neuron-sdk-legacy",
      "transpose2d_nki_kernels", f"{SDK}/transpose2d")
def transpose2d(module, run):
    rows, x, y = 128, 8, 16
    a = uniform((rows, x * y))
    out = run.kernel(module.tensor_transpose2D_kernel_, a, (x, y))
    return [check("out", out, a.reshape(rows, x, y).transpose(1, 2).reshape(rows, x * y))]


@case("legacy/average_pool2d", "legacy", "neuron-sdk-legacy",
      "average_pool2d_nki_kernels", f"{SDK}/average_pool2d")
def average_pool2d(module, run):
    image = uniform((64, 32, 32))
    out = run.kernel(module.tensor_avgpool_kernel, image, 2)
    return [check("out", out, F.avg_pool2d(image.double()[None], 2)[0])]


for _step, (_m, _k, _n) in {"basic": (64, 128, 512), "tiled": (256, 512, 1024),
                            "hoist_load": (256, 512, 1024),
                            "block_free_dimension": (256, 512, 1024),
                            "fully_optimized": (2048, 1024, 1024)}.items():
    case(f"legacy/matmul_{_step}", "legacy", "neuron-sdk-legacy",
         "matrix_multiplication_nki_kernels", f"{SDK}/matrix_multiplication")(
        matmul_driver(f"nki_matmul_{_step}_", _m, _k, _n))


@case("legacy/rmsnorm", "legacy", "neuron-sdk-legacy", "rmsnorm_nki_kernels", f"{SDK}/rmsnorm")
def rmsnorm(module, run):
    a, g = uniform((250, 512)), uniform((512,))   # 250 rows: a partial last tile
    out = run.kernel(module.nki_rmsnorm_kernel, a, g)
    a64 = a.double()
    return [check("out", out, a64 * torch.rsqrt(a64.square().mean(1, keepdim=True)) * g.double())]


def _layernorm(kernel_name):
    def driver(module, run):
        x, gamma, beta = uniform((300, 1024)), uniform((1024,)), uniform((1024,))
        out = run.kernel(getattr(module, kernel_name), x, 1e-5, gamma, beta)
        golden = F.layer_norm(x.double(), (1024,), gamma.double(), beta.double(), 1e-5)
        return [check("out", out, golden)]

    return driver


for _version in ("v1", "v2"):
    case(f"legacy/layernorm_{_version}", "legacy", "neuron-sdk-legacy", "layernorm_nki_kernel",
         f"{SDK}/layernorm")(_layernorm(f"nki_layernorm_kernel_{_version}"))


@case("legacy/sd_attention", "legacy", "neuron-sdk-legacy", "sd_attention_nki_kernels",
      f"{SDK}/sd_attention")
def sd_attention(module, run):
    q, k, v = (uniform((512, 64)) for _ in range(3))
    out = run.kernel(module.fused_self_attn_for_SD_small_head_size, q, k, v)
    return [check("out", out, attention(q, k, v, 0.125)[0], **MIXED_PRECISION)]


for _version in ("v1", "v2", "v3"):
    case(f"legacy/fused_mamba_{_version}", "legacy", "neuron-sdk-legacy", "mamba_nki_kernels",
         f"{SDK}/fused_mamba")(mamba_driver(f"mamba_{_version}"))


def _attention_fwd(kernel_name, seq_len):
    """The attention_fwd_performance tutorial: q, k, v [d_head=128, seq]."""

    def driver(module, run):
        q, k, v = (uniform((128, seq_len), -1.0, 1.0) for _ in range(3))
        out = run.kernel(getattr(module, kernel_name), q, k, v)
        golden = attention(q.T, k.T, v.T, 1.0)[0]
        return [check("out", out, golden, **MIXED_PRECISION)]

    return driver


for _version in ("v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v8a", "v9", "v10", "v11"):
    case(f"legacy/attention_fwd_{_version}", "legacy", "nki-samples", "attention_kernels",
         f"{TUTORIALS}/attention_fwd_performance")(
        _attention_fwd(f"attn_fwd_{_version}", 128 if _version in ("v1", "v2") else 512))


@case("legacy/flash_fwd", "legacy", "nki-samples-reference", "nki_samples.reference.attention",
      "src")
def flash_fwd(module, run):
    """Causal flash attention, training mode (returns the logsumexp too):
    q, k [b, h, d, s], v [b, h, s, d], one kernel instance per (b, h)."""
    b, h, d, s = 1, 2, 64, 1024
    q, k = uniform((b, h, d, s), -1.0, 1.0), uniform((b, h, d, s), -1.0, 1.0)
    v = uniform((b, h, s, d), -1.0, 1.0)
    config = module.FlashConfig(seq_tile_size=512, training=True)
    out, lse = run.kernel(module.flash_fwd[b, h], q, k, v, None, use_causal_mask=True,
                          mixed_precision=True, config=config)
    golden, golden_lse = attention(_t(q), _t(k), v, d ** -0.5, causal=True)
    # lse[b, h, p, t] is query t*128 + p.
    golden_lse = _t(golden_lse.reshape(b, h, s // 128, 128))
    return [check("o", out, golden, **MIXED_PRECISION),
            check("lse", lse, golden_lse, **MIXED_PRECISION)]


@case("legacy/flash_attn_bwd", "legacy", "nki-samples-reference",
      "nki_samples.reference.attention", "src")
def flash_attn_bwd(module, run):
    """Causal flash attention backward: q, k, v, o, dy all [b, h, d, s];
    the forward's output and logsumexp come from float64 math."""
    b, h, d, s = 1, 2, 64, 512
    q, k, v, dy = (uniform((b, h, d, s), -1.0, 1.0) for _ in range(4))
    scale = d ** -0.5
    o, lse = attention(_t(q), _t(k), _t(v), scale, causal=True)
    lse = _t(lse.reshape(b, h, s // 128, 128)).float().contiguous()
    dq, dk, dv = run.kernel(module.flash_attn_bwd[b, h], q, k, v, _t(o).float().contiguous(),
                            dy, lse, None, use_causal_mask=True, mixed_precision=True)
    golden = attention_grads(_t(q), _t(k), _t(v), _t(dy), scale, causal=True)
    tolerance = {"rtol": 2e-2, "atol": 2e-2}
    return [check(name, got, _t(want), **tolerance)
            for name, got, want in zip(("dq", "dk", "dv"), (dq, dk, dv), golden)]


@case("legacy/fused_self_attn_sd_small_head", "legacy", "nki-samples-reference",
      "nki_samples.reference.attention", "src")
def fused_self_attn_sd(module, run):
    """q [bs, d, s], k and v [bs, s, d]; one kernel instance per batch."""
    bs, d, s = 2, 64, 512
    q, k, v = uniform((bs, d, s)), uniform((bs, s, d)), uniform((bs, s, d))
    out = run.kernel(module.fused_self_attn_for_SD_small_head_size[bs], q, k, v)
    return [check("out", out, attention(_t(q), k, v, 0.125)[0], **MIXED_PRECISION)]


@case("legacy/allocated_fused_self_attn_sd", "legacy", "nki-samples-reference",
      "nki_samples.reference.allocated_attention", "src")
def allocated_fused_self_attn_sd(module, run):
    """q, k [bs, 128, s], v [bs, s, 128]; output [bs, 128, s]."""
    bs, d, s = 1, 128, 1024
    q, k, v = uniform((bs, d, s)), uniform((bs, d, s)), uniform((bs, s, d))
    out = run.kernel(module.allocated_fused_self_attn_for_SD_small_head_size[bs], q, k, v)
    golden = attention(_t(q), _t(k), v, 0.125)[0]
    return [check("out", out, _t(golden), **MIXED_PRECISION)]


@case("legacy/vision_select_and_scatter", "legacy", "nki-samples-reference",
      "nki_samples.reference.vision", "src")
def select_and_scatter(module, run):
    """Max-pool backward: 3x3 windows, stride 2, padding 1; each source value
    goes to its window's first maximum."""
    n, c, size = 2, 64, 16
    operand = torch.randn(n, c, size, size)
    source = torch.randn(n, c, size // 2, size // 2)
    out = run.kernel(module.select_and_scatter_kernel, operand, source)
    padded = F.pad(operand.double(), (1, 1, 1, 1), value=float("-inf"))
    windows = padded.unfold(2, 3, 2).unfold(3, 3, 2).reshape(n, c, size // 2, size // 2, 9)
    first_max = windows.argmax(-1)
    rows = 2 * torch.arange(size // 2)[:, None] + first_max // 3
    cols = 2 * torch.arange(size // 2)[None, :] + first_max % 3
    golden = torch.zeros(n, c, size + 2, size + 2, dtype=torch.float64)
    golden.view(n, c, -1).scatter_add_(2, (rows * (size + 2) + cols).reshape(n, c, -1),
                                      source.double().reshape(n, c, -1))
    return [check("out", out, golden[:, :, 1:-1, 1:-1])]


@case("legacy/vision_resize_nearest", "legacy", "nki-samples-reference",
      "nki_samples.reference.vision", "src")
def resize_nearest(module, run):
    """Nearest-neighbour resize by a non-integer factor (the docstring's
    30x20 -> 59x38), NHWC; source index floor(out_index * in/out) in float32."""
    data = torch.randn(1, 30, 20, 8)
    out_shape = (1, 59, 38, 8)
    out = run.kernel(module.resize_nearest_fixed_dma_kernel, data, out_shape)
    rows = torch.floor(torch.arange(59, dtype=torch.float32) * torch.tensor(30 / 59)).long()
    cols = torch.floor(torch.arange(38, dtype=torch.float32) * torch.tensor(20 / 38)).long()
    return [check("out", out, data[:, rows][:, :, cols])]


@case("legacy/vision_adaptive_avg_pool2d", "legacy", "nki-samples-reference",
      "nki_samples.reference.vision", "src")
def adaptive_avg_pool2d(module, run):
    image = torch.randn(2, 16, 15, 17)
    out = run.kernel(module.adaptive_avg_pool2d_kernel, image, (4, 5))
    return [check("out", out, F.adaptive_avg_pool2d(image.double(), (4, 5)))]


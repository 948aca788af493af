"""Cases for kernels published in the current namespace (`nki`): the Neuron
SDK documentation's examples at HEAD (neuron-sdk), nki-samples' current
tutorials, and nki-library's kernels (golden: the library's own PyTorch
reference next to each kernel)."""

import importlib
import types

import torch
import torch.nn.functional as F

from common import mamba_driver, matmul_driver, uniform
from harness import case, check

SDK = "nki/examples"
LIBRARY = "src"


def _reference(name):
    """A module of nki-library's PyTorch references (nkilib_src.nkilib.NAME)."""
    return importlib.import_module(f"nkilib_src.nkilib.{name}")


@case("current/getting_started_add", "current", "neuron-sdk", "getting_started_baremetal", SDK)
def getting_started_add(module, run):
    a, b = uniform((128, 512), dtype=torch.float16), uniform((128, 512), dtype=torch.float16)
    out = run.kernel(module.nki_tensor_add_kernel, a, b)
    return [check("c", out, (a.double() + b.double()).half())]


@case("current/simulate_quick_start", "current", "neuron-sdk", "nki_simulate_example",
      f"{SDK}/simulate")
def simulate_quick_start(module, run):
    # Importing the example already ran its own nki.simulate check.
    a, b = uniform((128, 512)), uniform((128, 512))
    return [check("out", run.kernel(module.add_kernel, a, b), a.double() + b.double())]


@case("current/tiled_tensor_add", "current", "neuron-sdk", "tensor_addition_nki_kernels",
      f"{SDK}/tensor_addition")
def tiled_tensor_add(module, run):
    a, b = uniform((256, 1024), dtype=torch.float16), uniform((256, 1024), dtype=torch.float16)
    out = run.kernel(module.nki_tensor_add, a, b)
    return [check("c", out, (a.double() + b.double()).half())]


@case("current/transpose2d", "current", "neuron-sdk", "transpose2d_nki_kernels",
      f"{SDK}/transpose2d")
def transpose2d(module, run):
    rows, x, y = 128, 8, 16
    a = uniform((rows, x * y))
    out = run.kernel(module.tensor_transpose2D_kernel_, a, (x, y))
    return [check("out", out, a.reshape(rows, x, y).transpose(1, 2).reshape(rows, x * y))]


@case("current/average_pool2d", "current", "neuron-sdk", "average_pool2d_nki_kernels",
      f"{SDK}/average_pool2d")
def average_pool2d(module, run):
    image = uniform((64, 32, 32))
    out = run.kernel(module.tensor_avgpool_kernel, image, 2)
    return [check("out", out, F.avg_pool2d(image.double()[None], 2)[0])]


for _version in ("v1", "v2", "v3"):
    case(f"current/fused_mamba_{_version}", "current", "neuron-sdk", "mamba_nki_kernels",
         f"{SDK}/fused_mamba")(mamba_driver(f"mamba_{_version}"))

for _step, (_m, _k, _n) in {"basic": (64, 128, 512), "tiled": (256, 512, 1024),
                            "hoist_load": (256, 512, 1024),
                            "block_free_dimension": (256, 512, 1024),
                            "fully_optimized": (2048, 1024, 1024)}.items():
    case(f"current/matmul_{_step}", "current", "neuron-sdk", "matrix_multiplication_nki_kernels",
         f"{SDK}/matrix_multiplication")(matmul_driver(f"nki_matmul_{_step}_", _m, _k, _n))

case("current/nki_samples_matmul_fully_optimized", "current", "nki-samples",
     "matrix_multiplication_nki_kernels", "src/nki_samples/tutorials/matrix_multiplication")(
    matmul_driver("nki_matmul_fully_optimized_", 2048, 1024, 1024))


@case("current/mxfp8_matmul", "current", "neuron-sdk", "mx_kernels",
      "nki/deep-dives/src/mxfp-matmul")
def mxfp8_matmul(module, run):
    """Quantize-MX both operands on the device (after the strided copies the
    MX layout needs), then Matmul-MX. Inputs have at most two mantissa bits,
    so MXFP8 (e5m2) holds them exactly and the golden is the plain product."""
    stationary = (torch.randint(-8, 9, (512, 128)) / 4).to(torch.bfloat16)
    moving = (torch.randint(-8, 9, (512, 512)) / 4).to(torch.bfloat16)
    out = run.kernel(module.kernel_copy_strided_quantize_matmul_mx, stationary, moving,
                     run.nki.language.float8_e5m2_x4, True)
    golden = (stationary.double().T @ moving.double()).to(torch.bfloat16)
    return [check("result", out, golden)]


@case("nkilib/cumsum", "current", "nki-library", "nkilib_src.nkilib.core.cumsum.cumsum", LIBRARY)
def cumsum(module, run):
    x = torch.randn(200, 3000)      # a partial partition tile, two free-dimension tiles
    out = run.kernel(module.cumsum, x)
    golden = _reference("core.cumsum.cumsum_torch").cumsum_torch_ref(x.double())["output_0"]
    return [check("y", out, golden, rtol=1e-3, atol=1e-3)]


@case("nkilib/cross_entropy_forward", "current", "nki-library",
      "nkilib_src.nkilib.experimental.loss.cross_entropy", LIBRARY)
def cross_entropy_forward(module, run):
    positions, vocab = 64, 4096
    logits = torch.randn(positions, vocab)
    targets = torch.randint(0, vocab, (positions,), dtype=torch.int32)
    loss, lse = run.kernel(module.cross_entropy_forward, logits, targets, positions_per_batch=32,
                           chunk_size=2048, dtype=run.nki.language.float32)
    reference = _reference("experimental.loss.cross_entropy_torch")
    golden_loss, golden_lse = reference.cross_entropy_forward_torch_ref(logits.double(),
                                                                        targets.long())
    return [check("loss", loss, golden_loss), check("lse", lse, golden_lse)]


def _norm_tkg(kernel_module, kernel_name, reference_name, with_beta):
    """rmsnorm_tkg / layernorm_tkg: subkernels (not @nki.jit) that write the
    output argument, [128, B*S, H/128] (LNC1 layout), from input [B, S, H]."""

    def driver(module, run):
        batch, seq, hidden = 2, 4, 512
        x = torch.randn(batch, seq, hidden).to(torch.bfloat16)
        gamma = uniform((1, hidden), 0.5, 1.5, torch.bfloat16)
        output = torch.zeros(128, batch * seq, hidden // 128, dtype=torch.bfloat16)
        extra = {"beta": uniform((1, hidden), -0.5, 0.5, torch.bfloat16)} if with_beta else {}
        run.kernel(run.nki.jit(getattr(module, kernel_name)), x, gamma, output, eps=1e-6, **extra)
        reference = getattr(_reference(reference_name), f"{kernel_name}_torch_ref_lnc1")
        golden = reference(x, gamma, output, eps=1e-6, **extra)["out"]
        return [check("output", run.written(output), golden)]

    return driver


case("nkilib/rmsnorm_tkg", "current", "nki-library",
     "nkilib_src.nkilib.core.subkernels.rmsnorm_tkg", LIBRARY)(
    _norm_tkg("rmsnorm_tkg", "rmsnorm_tkg", "core.subkernels.rmsnorm_torch", False))
case("nkilib/layernorm_tkg", "current", "nki-library",
     "nkilib_src.nkilib.core.subkernels.layernorm_tkg", LIBRARY)(
    _norm_tkg("layernorm_tkg", "layernorm_tkg", "core.subkernels.layernorm_torch", True))


@case("nkilib/attention_cte", "current", "nki-library",
      "nkilib_src.nkilib.core.attention.attention_cte", LIBRARY)
def attention_cte(module, run):
    """Causal prefill attention: q [B, Sq, d] (tp_q), k [B, d, Skv], v [B, Skv, d]."""
    batch, seq, d = 2, 512, 64
    q = torch.randn(batch, seq, d).to(torch.bfloat16)
    k = torch.randn(batch, d, seq).to(torch.bfloat16)
    v = torch.randn(batch, seq, d).to(torch.bfloat16)
    out = run.kernel(module.attention_cte, q, k, v, scale=d ** -0.5, causal_mask=True)
    golden = _reference("core.attention.attention_cte_torch").attention_cte_torch_ref(
        q, k, v, scale=d ** -0.5, causal_mask=True)
    return [check("out", out, golden.to(torch.bfloat16))]


@case("nkilib/cascaded_max", "current", "nki-library", "nkilib_src.nkilib.core.max.cascaded_max",
      LIBRARY)
def cascaded_max(module, run):
    x = torch.randn(4, 5, 4058)
    values, indices = run.kernel(module.cascaded_max, x)
    golden = _reference("core.max.cascaded_max_torch").cascaded_max_torch_ref(x)
    return [check("max_values", values, golden["max_values"]),
            check("max_indices", indices, golden["max_indices"])]


@case("nkilib/rope", "current", "nki-library", "nkilib_src.nkilib.core.embeddings.rope", LIBRARY)
def rope(module, run):
    """x [d_head, B, heads, S]; cos and sin [d_head/2, B, S] of real RoPE angles."""
    d_head, batch, heads, seq = 64, 2, 4, 128
    x = torch.randn(d_head, batch, heads, seq).to(torch.bfloat16)
    inverse_frequency = 10000.0 ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)
    angles = inverse_frequency[:, None] * torch.arange(seq, dtype=torch.float64)[None, :]
    cos = angles.cos()[:, None, :].expand(-1, batch, -1).to(torch.bfloat16).contiguous()
    sin = angles.sin()[:, None, :].expand(-1, batch, -1).to(torch.bfloat16).contiguous()
    out = run.kernel(module.RoPE, x, cos, sin)
    golden = _reference("core.embeddings.rope_torch").rope_torch_ref(
        x.double(), cos.double(), sin.double())["x_out"]
    return [check("x_out", out, golden.to(torch.bfloat16))]


@case("nkilib/router_topk", "current", "nki-library",
      "nkilib_src.nkilib.core.router_topk.router_topk", LIBRARY)
def router_topk(module, run):
    """MoE router: logits = x.T @ w + bias (x [H, T]), softmax, top-4 of 128
    experts; a subkernel writing its three output arguments."""
    tokens, hidden, experts, k = 32, 1024, 128, 4
    x = uniform((hidden, tokens), -0.1, 0.1, torch.bfloat16)
    w = uniform((hidden, experts), -0.1, 0.1, torch.bfloat16)
    bias = uniform((1, experts), -0.1, 0.1, torch.bfloat16)
    logits = torch.zeros(tokens, experts, dtype=torch.bfloat16)
    affinities = torch.zeros(tokens, experts, dtype=torch.bfloat16)
    index = torch.zeros(tokens, k, dtype=torch.uint32)
    softmax = _reference("core.utils.common_types").RouterActFnType.SOFTMAX
    run.kernel(run.nki.jit(module.router_topk), x, w, bias, logits, affinities, index,
               act_fn=softmax, k=k, x_hbm_layout=0, x_sb_layout=0)
    golden = _reference("core.router_topk.router_topk_torch").router_topk_torch_ref(
        x.double(), w.double(), bias.double(), None, None, None, act_fn=softmax, k=k,
        x_hbm_layout=0, x_sb_layout=0)
    return [check("router_logits", run.written(logits), golden["router_logits"].bfloat16()),
            check("expert_affinities", run.written(affinities),
                  golden["expert_affinities"].bfloat16()),
            check("expert_index", run.written(index).long(), golden["expert_index"])]


@case("nkilib/topk", "current", "nki-library", "nkilib_src.nkilib.core.topk.rotational_topk",
      LIBRARY)
def topk(module, run):
    """The top-8 of a 3168-entry vocabulary for 8 tokens, on one core
    (`topk[1]`, a host function that launches rotational_topk)."""
    x = torch.randn(8, 1, 3168)
    values, _ = run.host(module.topk[1], x, 8)
    config = types.SimpleNamespace(topk_config=types.SimpleNamespace(k=8, sorted=True))
    golden = _reference("core.topk.torch_ref").topk_torch_ref(x, config)
    # As nki-library's own test: indices of equal values may differ.
    return [check("topk_values", values, golden["topk_values"])]


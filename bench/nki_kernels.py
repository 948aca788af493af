"""NKI kernels on the simulated device, each figure against a baseline
measured in the same run:

- nki_rmsnorm_vs_eager: examples/nki/rmsnorm.py's kernel (250 x 512 float32)
  on neuron against the same computation in eager ATen on neuron
  (a * rsqrt(mean(a^2)) * g: five operators), time per call (kernel time
  over eager time: below 1, the kernel is faster).
- nki_rmsnorm_us, nki_rmsnorm_eager_us: the two times per call.
- nki_trace_ms_<kernel>: tracing each example kernel once (a fresh trace of
  its acceptance shape), and its instruction count.
- nki_trn2_estimate_us_<kernel>: nki.estimate's predicted time on trn2 (a
  model, not a measurement: docs/nki.md), for the examples and for kernels
  of the kernel suite (tests/nki) that use the newer instructions: Mamba's
  scan with partition broadcasts (legacy API), flash attention's forward,
  and an fp8 matmul in double-row mode with the same matmul in bf16 beside
  it (nki_trn2_fp8_vs_bf16_matmul: the fp8 one's predicted time over the
  bf16 one's).
- nki_suite_simulate_s: the kernel suite's small cases, each traced and run
  once in nki.simulate, in seconds.
"""
import json
import pathlib
import sys
import time

import daemon

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples" / "nki"
SUITE = pathlib.Path(__file__).resolve().parent.parent / "tests" / "nki"
ROUNDS = 5
CALLS = 50


def run(build_dir: pathlib.Path) -> dict:
    return daemon.run_worker(build_dir, __file__)


def _best_per_call(function, synchronize):
    best = float("inf")
    for _ in range(ROUNDS):
        synchronize()
        started = time.perf_counter()
        for _ in range(CALLS):
            function()
        synchronize()
        best = min(best, (time.perf_counter() - started) / CALLS)
    return best


def worker():
    import torch
    import torch_neuronx  # noqa: F401

    import nki

    sys.path.insert(0, str(EXAMPLES))
    import matmul
    import rmsnorm
    import sin_cos
    import softmax
    import tensor_add

    figures = {}
    a = torch.randn(250, 512, device="neuron")
    g = torch.randn(512, device="neuron")

    def eager():
        return a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True)) * g

    kernel = _best_per_call(lambda: rmsnorm.rmsnorm_kernel(a, g), torch.neuron.synchronize)
    baseline = _best_per_call(eager, torch.neuron.synchronize)
    figures["nki_rmsnorm_us"] = round(kernel * 1e6, 1)
    figures["nki_rmsnorm_eager_us"] = round(baseline * 1e6, 1)
    figures["nki_rmsnorm_vs_eager"] = round(kernel / baseline, 3)

    def fresh(kernel):
        return nki.jit(kernel.function)

    cases = {
        "sin": (sin_cos.elementwise_tiled_kernel,
                (torch.empty(256, 1024), torch.empty(256, 1024), nki.language.sin)),
        "tensor_add": (tensor_add.tensor_add_kernel,
                       (torch.empty(256, 1024, dtype=torch.float16),
                        torch.empty(256, 1024, dtype=torch.float16))),
        "matmul": (matmul.matmul_kernel, (torch.empty(512, 1024, dtype=torch.bfloat16),
                                          torch.empty(512, 1024, dtype=torch.bfloat16))),
        "rmsnorm": (rmsnorm.rmsnorm_kernel, (torch.empty(250, 512), torch.empty(512))),
        "softmax": (softmax.softmax_kernel, (torch.empty(512, 2048, dtype=torch.bfloat16),)),
    }
    for name, (kernel, arguments) in cases.items():
        traced = nki.trace(fresh(kernel), *arguments)
        figures[f"nki_trace_ms_{name}"] = round(traced.trace_seconds * 1e3, 2)
        figures[f"nki_instructions_{name}"] = traced.instruction_count
        figures[f"nki_trn2_estimate_us_{name}"] = round(
            nki.estimate(kernel)(*arguments).total_us, 2)
    figures.update(_suite_figures())
    return figures


def _suite_figures():
    import numpy as np
    import torch

    import nki

    sys.path.insert(0, str(SUITE))
    import current_attention
    import current_kernels
    import legacy_kernels
    import suite

    figures = {}
    rng = np.random.default_rng(0)

    def inputs(case):
        return suite.CASES[case].inputs(rng, "full")

    def matmul_bf16(lhs_t, rhs):
        return current_kernels.matmul_blocked.function(lhs_t, rhs)

    estimated = {
        "mamba_scan": (legacy_kernels.selective_scan, inputs("legacy_mamba_selective_scan")),
        "flash_attention_forward": (current_attention.flash_forward,
                                    inputs("current_flash_attention_forward")),
        "fp8_double_row_matmul": (current_kernels.matmul_fp8,
                                  inputs("current_matmul_fp8_double_row")),
        "bf16_matmul": (nki.jit(matmul_bf16), [torch.empty(1024, 128, dtype=torch.bfloat16),
                                               torch.empty(1024, 512, dtype=torch.bfloat16)]),
    }
    for name, (kernel, arguments) in estimated.items():
        figures[f"nki_trn2_estimate_us_{name}"] = round(
            nki.estimate(kernel)(*arguments).total_us, 2)
    figures["nki_trn2_fp8_vs_bf16_matmul"] = round(
        figures["nki_trn2_estimate_us_fp8_double_row_matmul"] /
        figures["nki_trn2_estimate_us_bf16_matmul"], 3)
    started = time.perf_counter()
    for case in suite.CASES.values():
        case.launch(*case.inputs(rng, "small"))
    figures["nki_suite_simulate_s"] = round(time.perf_counter() - started, 2)
    return figures


if __name__ == "__main__":
    if "--worker" in sys.argv:
        print(json.dumps(worker()))
    else:
        print(run(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build").resolve()))

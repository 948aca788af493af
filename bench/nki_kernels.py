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
  model, not a measurement: docs/nki.md).
"""
import json
import pathlib
import sys
import time

import daemon

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples" / "nki"
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
    return figures


if __name__ == "__main__":
    if "--worker" in sys.argv:
        print(json.dumps(worker()))
    else:
        print(run(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build").resolve()))

"""How long a new process waits for its first result on `neuron`.

With neuron-rtd already up, a fresh Python process imports torch (which
loads torch_neuronx through torch's device-backend entry point), then runs
one small operator on `neuron` and copies the result to the CPU:
`attach_first_op_ms` is the time from `import torch` done to that result
(session open, the first executable's load and launch, and whatever the
first generic operator imports). The same operator on the CPU in a fresh
process is the baseline (`first_op_cpu_ms`). Goal: attach_first_op_ms
<= 50 with the daemon up.
"""
import json
import os
import pathlib
import statistics
import subprocess
import sys

import daemon

RUNS = 5
SCRIPT = """
import json, sys, time
import torch
started = time.perf_counter()
x = torch.ones(4, device=sys.argv[1])
y = (x + 1).cpu()
print(json.dumps({"ms": (time.perf_counter() - started) * 1000.0}))
"""


def _first_op_ms(device, env):
    samples = []
    for _ in range(RUNS):
        result = subprocess.run([sys.executable, "-c", SCRIPT, device], env=env, check=True,
                                capture_output=True, text=True)
        samples.append(json.loads(result.stdout.strip().splitlines()[-1])["ms"])
    return round(statistics.median(samples), 3)


def run(build_dir: pathlib.Path) -> dict:
    process, sock_path, workdir, _ = daemon.start(str(build_dir / "bin" / "neuron-rtd"))
    try:
        env = dict(os.environ, NEURON_RTD_ADDRESS=f"unix:{sock_path}", NEURON_RTD_AUTOSTART="0")
        neuron = _first_op_ms("neuron", env)
        cpu = _first_op_ms("cpu", env)
    finally:
        daemon.stop(process, workdir)
    return {"attach_first_op_ms": neuron, "first_op_cpu_ms": cpu,
            "attach_first_op_vs_cpu": round(neuron / cpu, 3) if cpu else 0.0}

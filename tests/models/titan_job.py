"""TorchTitan's llama3 debug job, run unchanged on `neuron` and on the CPU.

Shared by tests/models/test_torchtitan.py and bench/titan_llama.py. A job
directory holds what TorchTitan's repository ships beside its debug config
and its wheel does not: a tokenizer (byte-level BPE, 2000 tokens, trained
here on the project's docs with Hugging Face `tokenizers`) and a `c4_test`
style dataset (JSON lines of {"text": ...}, the same paragraphs). Both twins
start from one seed checkpoint (`--checkpoint.create_seed_checkpoint`), so
their losses agree step by step.

`neuron` runs are exactly the user's command, `torchrun -m torchtitan.train
--job.config_file ...`, with torch_neuronx loaded by PyTorch's device
backend autoload; CPU runs go through titan/cpu_reference.py.
"""

import json
import os
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
CONFIG = HERE / "titan" / "llama3_debug.toml"
CPU_LAUNCHER = HERE / "titan" / "cpu_reference.py"
DOCS = HERE.parent.parent / "docs"
SPECIAL_TOKENS = ["<|begin_of_text|>", "<|end_of_text|>"]
STEP_LINE = re.compile(r"step:\s*(\d+)\s+loss:\s*([0-9.]+)\s+grad_norm:\s*([0-9.]+)"
                       r".*?tps:\s*([0-9,]+)")


def paragraphs():
    texts = []
    for document in sorted(DOCS.rglob("*.md")):
        texts += [p.strip() for p in document.read_text().split("\n\n") if len(p.strip()) > 40]
    return texts


def build_assets(job_dir):
    """Writes assets/tokenizer and assets/c4_test under job_dir (the paths
    llama3_debug.toml names relative to the working directory)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    job_dir = pathlib.Path(job_dir)
    tokenizer_dir = job_dir / "assets" / "tokenizer"
    dataset_dir = job_dir / "assets" / "c4_test"
    tokenizer_dir.mkdir(parents=True, exist_ok=True)
    dataset_dir.mkdir(parents=True, exist_ok=True)
    texts = paragraphs()
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=2000, special_tokens=SPECIAL_TOKENS, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer.save(str(tokenizer_dir / "tokenizer.json"))
    (tokenizer_dir / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": SPECIAL_TOKENS[0], "eos_token": SPECIAL_TOKENS[1]}))
    with open(dataset_dir / "data.json", "w") as data:
        for text in texts:
            data.write(json.dumps({"text": text}) + "\n")


def command(device, *args, ranks=1):
    """The launch command of one job on `device` ("neuron" or "cpu")."""
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc-per-node", str(ranks)]
    program = ["-m", "torchtitan.train"] if device == "neuron" else [str(CPU_LAUNCHER)]
    return [*torchrun, *program, "--job.config_file", str(CONFIG), *args]


def run(job_dir, device, *args, ranks=1, timeout=1200):
    """Runs a job of `ranks` processes in job_dir; returns its log. Raises
    with the log's tail when the job fails."""
    env = dict(os.environ)
    if device == "cpu":
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    result = subprocess.run(command(device, *args, ranks=ranks), cwd=job_dir, env=env, timeout=timeout,
                            capture_output=True, text=True)
    log = result.stdout + result.stderr
    if result.returncode != 0:
        raise RuntimeError(f"torchtitan on {device} exited {result.returncode}:\n{log[-6000:]}")
    return log


def create_seed_checkpoint(job_dir):
    """The step-0 checkpoint both twins load (TorchTitan builds it on the CPU),
    from a fixed seed: the same weights every run, whose loss falls within
    the tests' few steps (a random start sometimes did not, on both twins)."""
    run(job_dir, "cpu", "--checkpoint.enable", "--checkpoint.create_seed_checkpoint",
        "--checkpoint.folder", "seed", "--training.steps", "1", "--debug.seed", "0")
    return pathlib.Path(job_dir) / "outputs" / "seed"


def train(job_dir, seed_folder, device, *args, ranks=1):
    """Trains from the seed checkpoint without saving; returns the log and
    one (step, loss, grad_norm, tokens/s) per step, as the first rank to
    log it printed it (every rank prints the global loss)."""
    log = run(job_dir, device, "--checkpoint.enable", "--checkpoint.load_only",
              "--checkpoint.folder", str(seed_folder), *args, ranks=ranks)
    steps = {}
    for step, loss, norm, tps in STEP_LINE.findall(log):
        steps.setdefault(int(step), (int(step), float(loss), float(norm),
                                     int(tps.replace(",", ""))))
    steps = [steps[step] for step in sorted(steps)]
    if not steps:
        raise RuntimeError(f"no step lines in torchtitan's log on {device}:\n{log[-6000:]}")
    return log, steps

"""Trains two small models on the `neuron` device and the same runs on the
CPU, and prints the loss of each step side by side.

    python examples/train.py [--steps N] [--model mlp|transformer|both]

Every operator of the neuron run executes in neuron-rtd; with no daemon
running, the first use of the device starts a per-user one on the simulated
Trainium. Both runs start from the same weights and data, so the losses agree
to float32 rounding.
"""

import argparse
import copy
import time

import torch
import torch.nn as nn
import torch_neuronx


class MLP(nn.Module):
    def __init__(self, features=64, hidden=256, classes=10):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(features, hidden), nn.GELU(), nn.LayerNorm(hidden),
            nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, classes),
        )

    def forward(self, x):
        return self.net(x)


class TinyLM(nn.Module):
    """A small causal transformer language model."""

    def __init__(self, vocab=1000, d_model=256, layers=4, heads=4, seq=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.position = nn.Parameter(torch.randn(seq, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(
            d_model, heads, dim_feedforward=4 * d_model, dropout=0.0, batch_first=True,
            norm_first=True,
        )
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq),
                             persistent=False)

    def forward(self, tokens):
        seq = tokens.shape[1]
        x = self.embed(tokens) + self.position[:seq]
        x = self.blocks(x, mask=self.mask[:seq, :seq], is_causal=True)
        return self.head(self.norm(x))


def batches(kind, steps, generator):
    for _ in range(steps):
        if kind == "mlp":
            x = torch.randn(32, 64, generator=generator)
            yield x, (x[:, :10].sum(dim=1) > 0).long() + (x[:, 10] > 0).long()
        else:
            tokens = torch.randint(0, 1000, (8, 129), generator=generator)
            yield tokens[:, :-1], tokens[:, 1:]


def train(model, device, kind, steps, seed):
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    losses, times = [], []
    for inputs, targets in batches(kind, steps, torch.Generator().manual_seed(seed)):
        start = time.perf_counter()
        inputs, targets = inputs.to(device), targets.to(device)
        logits = model(inputs)
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())  # synchronizes: the step is done
        times.append(time.perf_counter() - start)
    return losses, times


def run(kind, steps, seed=0):
    torch.manual_seed(seed)
    model = MLP() if kind == "mlp" else TinyLM()
    reference = copy.deepcopy(model)
    neuron_losses, neuron_times = train(model, "neuron", kind, steps, seed)
    cpu_losses, cpu_times = train(reference, "cpu", kind, steps, seed)
    print(f"\n{kind}: {sum(p.numel() for p in reference.parameters()):,} parameters, "
          f"{steps} AdamW steps")
    print(f"{'step':>4}  {'loss neuron':>12}  {'loss cpu':>12}  {'|diff|':>9}  "
          f"{'ms neuron':>9}  {'ms cpu':>8}")
    for step, (a, b, ta, tb) in enumerate(zip(neuron_losses, cpu_losses, neuron_times, cpu_times)):
        print(f"{step:>4}  {a:>12.6f}  {b:>12.6f}  {abs(a - b):>9.2e}  {ta * 1e3:>9.1f}  "
              f"{tb * 1e3:>8.1f}")
    return max(abs(a - b) for a, b in zip(neuron_losses, cpu_losses))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--model", choices=["mlp", "transformer", "both"], default="both")
    args = parser.parse_args()
    kinds = ["mlp", "transformer"] if args.model == "both" else [args.model]
    worst = max(run(kind, args.steps) for kind in kinds)
    info = torch_neuronx._C._session_info()
    print(f"\nneuron-rtd session {info['session_id']} at {info['address']}; "
          f"executables loaded: {torch_neuronx._C._op_stats()['executables']}, "
          f"launches: {torch_neuronx._C._op_stats()['launches']}")
    print(f"operators that fell back to the CPU: {torch_neuronx.get_fallback_ops() or 'none'}")
    print(f"largest loss difference neuron vs cpu: {worst:.2e}")


if __name__ == "__main__":
    main()

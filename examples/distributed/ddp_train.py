"""DDP training on neuron, on one host or several: start it with torchrun,
e.g. on each of two hosts (see docs/distributed.md)

    torchrun --nnodes 2 --node-rank N --nproc-per-node 2 \\
             --master-addr HOST0 --master-port 29500 ddp_train.py

Each rank trains a small MLP on its own batches; DDP averages the
gradients, so every replica ends identical. Rank 0 prints the loss as it
falls; every rank prints a checksum of its parameters at the end."""
import os

import torch
import torch.distributed as dist

import torch_neuronx  # noqa: F401  (registers the neuron device and backend)

STEPS = 20


def main():
    dist.init_process_group("neuron")
    rank = dist.get_rank()
    torch.neuron.set_device(int(os.environ.get("LOCAL_RANK", 0)) % torch.neuron.device_count())
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    model = torch.nn.parallel.DistributedDataParallel(model.to("neuron"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(100 + rank)
    target = torch.nn.Linear(16, 1)
    for step in range(STEPS):
        x = torch.randn(32, 16, generator=generator)
        with torch.no_grad():
            y = target(x)
        loss = torch.nn.functional.mse_loss(model(x.to("neuron")), y.to("neuron"))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0 and step in (0, STEPS - 1):
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    checksum = sum(parameter.detach().double().sum().item() for parameter in model.parameters())
    print(f"rank {rank} checksum {checksum:.10f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""What test_multiprocessing.py's spawned children run (a module of its own,
so that ``spawn`` children import it by name). Each reports to the parent
through a queue and waits with a timeout, so a failure is an answer, never a
hang."""

import torch
import torch_neuronx  # noqa: F401

TIMEOUT_S = 120


def add_one_in_place(inbox, outbox):
    shared = inbox.get(timeout=TIMEOUT_S)
    expected = torch.arange(shared.numel(), dtype=torch.float32) + 8
    if shared.device.type != "neuron" or not torch.equal(shared.cpu(), expected):
        outbox.put(f"received {shared.device} {shared.cpu()[:4]}")
        return
    shared.add_(1)
    torch.neuron.synchronize()
    outbox.put("done")


def run_model(model, inputs, outbox):
    with torch.no_grad():
        outbox.put(model(inputs.to("neuron")).cpu().tolist())  # not a CPU tensor: its fd dies with us


def produce_and_exit(outbox, received):
    produced = torch.full((256,), 7.0, device="neuron")
    outbox.put(produced)
    received.wait(TIMEOUT_S)


class DeviceDataset(torch.utils.data.Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, index):
        return torch.full((4,), float(index), device="neuron")

"""neuron tensors through torch.multiprocessing with spawned processes, as
CUDA tensors go: the receiver gets the sender's device memory (a handle that
neuron-rtd redeems), not a copy."""

import pytest
import torch
import torch.multiprocessing as mp

import torch_neuronx

import multiprocessing_cases as cases

spawn = mp.get_context("spawn")


def join(process):
    process.join(cases.TIMEOUT_S)
    assert process.exitcode == 0


def test_a_tensor_on_a_queue_is_the_same_memory_in_the_child():
    base = torch.arange(1030, dtype=torch.float32, device="neuron")
    view = base[6:]  # a view: the storage offset travels too
    view.add_(2)
    inbox, outbox = spawn.Queue(), spawn.Queue()
    child = spawn.Process(target=cases.add_one_in_place, args=(inbox, outbox))
    child.start()
    inbox.put(view)
    assert outbox.get(timeout=cases.TIMEOUT_S) == "done"
    join(child)
    torch.testing.assert_close(view.cpu(), torch.arange(1024, dtype=torch.float32) + 9)
    torch.testing.assert_close(base[:6].cpu(), torch.arange(6, dtype=torch.float32))


def test_a_shared_model_runs_in_the_child_with_the_parents_weights():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    model.to("neuron").share_memory()
    inputs = torch.randn(3, 8)
    outbox = spawn.Queue()
    child = spawn.Process(target=cases.run_model, args=(model, inputs, outbox))
    child.start()
    answer = torch.tensor(outbox.get(timeout=cases.TIMEOUT_S))
    join(child)
    with torch.no_grad():
        torch.testing.assert_close(answer, model(inputs.to("neuron")).cpu())


def test_the_receiver_keeps_its_tensor_when_the_sender_exits():
    outbox, received = spawn.Queue(), spawn.Event()
    child = spawn.Process(target=cases.produce_and_exit, args=(outbox, received))
    child.start()
    tensor = outbox.get(timeout=cases.TIMEOUT_S)
    received.set()
    join(child)
    tensor.add_(1)
    torch.testing.assert_close(tensor.cpu(), torch.full((256,), 8.0))


def test_dataloader_workers_return_device_tensors():
    loader = torch.utils.data.DataLoader(
        cases.DeviceDataset(), batch_size=2, num_workers=2, multiprocessing_context=spawn)
    batches = [batch.cpu() for batch in loader]
    expected = [torch.tensor([[2.0 * b] * 4, [2.0 * b + 1] * 4]) for b in range(8)]
    assert len(batches) == len(expected)
    for batch, want in zip(batches, expected):
        torch.testing.assert_close(batch, want)


def test_a_sent_block_is_not_reused_until_the_receiver_lets_go():
    sent = torch.full((1024,), 5.0, device="neuron")
    inbox = spawn.SimpleQueue()
    inbox.put(sent)  # pickled here: this process is the receiver too
    received = inbox.get()
    address = sent.data_ptr()
    del sent
    # The sender's allocator must not hand the block out while `received`
    # may still be read.
    others = [torch.zeros(1024, device="neuron") for _ in range(4)]
    assert all(other.data_ptr() != address for other in others)
    torch.testing.assert_close(received.cpu(), torch.full((1024,), 5.0))


def test_a_forged_handle_is_refused_with_a_clear_error():
    with pytest.raises(ValueError, match="a segment handle has 16 bytes"):
        torch_neuronx._multiprocessing._rebuild_storage(b"forged", 0, 16)
    with pytest.raises(RuntimeError, match="no shared segment has this handle"):
        torch_neuronx._multiprocessing._rebuild_storage(b"0123456789abcdef", 0, 16)


def test_an_out_of_range_slice_of_a_shared_segment_is_refused():
    tensor = torch.ones(16, device="neuron")
    handle, offset, nbytes = torch_neuronx._C._share_storage(tensor)
    with pytest.raises(ValueError, match="does not fit its segment"):
        torch_neuronx._C._open_shared_storage(handle, offset, 1 << 40)
    torch.testing.assert_close(tensor.cpu(), torch.ones(16))

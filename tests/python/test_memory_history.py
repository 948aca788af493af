"""torch.neuron.memory's memory history: _record_memory_history, _snapshot
and _dump_snapshot in PyTorch's snapshot format, read back by PyTorch's own
visualiser code (torch.cuda._memory_viz)."""

import pickle

import pytest
import torch
from torch.cuda import _memory_viz

import torch.neuron.memory as neuron_memory


@pytest.fixture(autouse=True)
def history():
    torch.neuron.synchronize()
    torch.neuron.empty_cache()
    yield neuron_memory
    neuron_memory._record_memory_history(None, clear_history=True)


def allocate_the_weights():
    return torch.empty(1 << 20, device="neuron")


def frame_names(frames):
    return [frame["name"] for frame in frames]


def entries(snapshot, action=None):
    return [entry for entry in snapshot["device_traces"][0]
            if action is None or entry["action"] == action]


def test_allocations_and_frees_are_recorded_with_their_python_stacks(history):
    history._record_memory_history()
    weights = allocate_the_weights()
    address = weights.data_ptr()
    scratch = torch.empty(100, device="neuron")
    scratch_address = scratch.data_ptr()
    del scratch
    snapshot = history._snapshot()

    alloc = [e for e in entries(snapshot, "alloc") if e["addr"] == address]
    assert len(alloc) == 1 and alloc[0]["size"] == 4 << 20
    assert "allocate_the_weights" in frame_names(alloc[0]["frames"])
    assert any(frame["filename"].endswith("test_memory_history.py") for frame in alloc[0]["frames"])
    actions = [e["action"] for e in entries(snapshot)
               if e["addr"] == scratch_address and not e["action"].startswith("segment")]
    assert actions == ["alloc", "free_requested", "free_completed"]
    assert entries(snapshot)[-1]["action"] == "snapshot"
    assert {"segment_alloc"} <= {e["action"] for e in entries(snapshot)}

    segment = next(s for s in snapshot["segments"]
                   if s["address"] <= address < s["address"] + s["total_size"])
    assert segment["device"] == 0 and segment["segment_type"] == "large"
    assert sum(block["size"] for block in segment["blocks"]) == segment["total_size"]
    block = next(b for b in segment["blocks"] if b["address"] == address)
    assert block["state"] == "active_allocated" and block["requested_size"] == 4 << 20
    assert "allocate_the_weights" in frame_names(block["frames"])
    assert segment["allocated_size"] >= 4 << 20
    assert all(b["frames"] == [] for b in segment["blocks"] if b["state"] == "inactive")


def test_pytorchs_visualiser_reads_the_snapshot(history, tmp_path):
    history._record_memory_history()
    kept = [torch.randn(256, 256, device="neuron") for _ in range(3)]
    del kept[1]
    path = tmp_path / "snapshot.pickle"
    history._dump_snapshot(str(path))
    with open(path, "rb") as file:
        snapshot = pickle.load(file)

    assert "segments: " in _memory_viz.segsum(snapshot)
    assert "free completed for" in _memory_viz.trace(snapshot)
    flamegraph = _memory_viz.memory(snapshot, format_flamegraph=lambda lines: lines)
    assert "test_pytorchs_visualiser_reads_the_snapshot" in flamegraph
    assert _memory_viz.segments(snapshot, format_flamegraph=lambda lines: lines)
    assert "<html>" in _memory_viz.trace_plot(snapshot).lower()
    assert _memory_viz.segment_plot(snapshot)
    assert torch.neuron.memory_snapshot() == snapshot["segments"]


def test_the_history_is_bounded_oldest_first(history):
    history._record_memory_history(max_entries=5)
    sizes = [512 * (n + 1) for n in range(10)]
    for size in sizes:
        torch.empty(size, dtype=torch.uint8, device="neuron")
    trace = entries(history._snapshot())
    assert [(e["action"], e["size"]) for e in trace] == [
        ("free_completed", sizes[-2]), ("alloc", sizes[-1]), ("free_requested", sizes[-1]),
        ("free_completed", sizes[-1]), ("snapshot", 0)]


def test_a_smaller_bound_keeps_the_newest_entries_in_order(history):
    history._record_memory_history(max_entries=8)
    for size in (512, 1024, 1536):
        torch.empty(size, dtype=torch.uint8, device="neuron")  # 3 entries each
    history._record_memory_history(max_entries=4)
    trace = entries(history._snapshot())
    assert [(e["action"], e["size"]) for e in trace] == [
        ("alloc", 1536), ("free_requested", 1536), ("free_completed", 1536), ("snapshot", 0)]


def test_stopping_keeps_the_history_and_clear_history_drops_it(history):
    history._record_memory_history()
    torch.empty(10, device="neuron")
    history._record_memory_history(None)
    recorded = len(entries(history._snapshot()))
    torch.empty(10, device="neuron")
    assert len(entries(history._snapshot())) == recorded
    history._record_memory_history(None, clear_history=True)
    assert entries(history._snapshot()) == []


def test_state_only_keeps_stacks_of_live_allocations(history):
    history._record_memory_history("state")
    weights = allocate_the_weights()
    snapshot = history._snapshot()
    assert entries(snapshot) == []
    block = next(b for s in snapshot["segments"] for b in s["blocks"]
                 if b["address"] == weights.data_ptr())
    assert "allocate_the_weights" in frame_names(block["frames"])

    history._record_memory_history("all", context="state")
    allocate_the_weights()
    assert all(e["frames"] == [] for e in entries(history._snapshot()))

    history._record_memory_history("all", context=None)
    kept = allocate_the_weights()
    snapshot = history._snapshot()
    assert entries(snapshot, "alloc")
    assert all(b["frames"] == [] for s in snapshot["segments"] for b in s["blocks"]
               if b["address"] == kept.data_ptr())


def test_free_stacks_need_context_all(history):
    history._record_memory_history(context="alloc")
    weights = allocate_the_weights()
    del weights
    snapshot = history._snapshot()
    assert entries(snapshot, "alloc")[-1]["frames"]
    assert entries(snapshot, "free_requested")[-1]["frames"] == []


def test_cpp_frames_with_stacks_all(history):
    history._record_memory_history(stacks="python")
    torch.empty(10, device="neuron")
    python_frames = entries(history._snapshot(), "alloc")[-1]["frames"]
    history._record_memory_history(stacks="all", clear_history=True)
    torch.empty(10, device="neuron")
    all_frames = entries(history._snapshot(), "alloc")[-1]["frames"]
    assert len(all_frames) > len(python_frames)
    assert any("torch_neuronx" in frame["name"] or "at::" in frame["name"] for frame in all_frames)


def test_skipped_actions_and_out_of_memory(history):
    history._record_memory_history(skip_actions=["free_requested"])
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(1 << 32, device="neuron")
    torch.empty(10, device="neuron")
    trace = entries(history._snapshot())
    assert not [e for e in trace if e["action"] == "free_requested"]
    oom = [e for e in trace if e["action"] == "oom"]
    assert len(oom) == 1 and oom[0]["size"] == 1 << 34 and oom[0]["device_free"] > 0


@pytest.mark.parametrize("arguments, message", [
    (dict(enabled="everything"), "enabled must be None, 'state' or 'all'"),
    (dict(context="some"), "context must be None, 'state', 'alloc' or 'all'"),
    (dict(stacks="cpp"), "stacks must be 'python' or 'all'"),
    (dict(max_entries=-1), "max_entries must be >= 0"),
    (dict(skip_actions=["malloc"]), "unknown action 'malloc' in skip_actions"),
])
def test_bad_arguments_raise_value_error(history, arguments, message):
    with pytest.raises(ValueError, match=message):
        history._record_memory_history(**arguments)
    torch.empty(10, device="neuron")
    assert entries(history._snapshot()) == []

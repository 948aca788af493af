"""torch.profiler on neuron: device time per operator from neuron-rtd's
stamps, NeuronConfig and NeuronProfiler's exports, timing events."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch
import torch_neuronx
from torch.profiler import ProfilerActivity, profile
from torch_neuronx.profiling import NeuronConfig, NeuronProfiler, ProfileMode, last_capture

# On real Trainium (the daemon's nrt backend; here over the fake libnrt)
# operators without a NEFF run on the host: their engine is "Host".
ON_NRT = os.environ.get("NEURON_TEST_DEVICE_BACKEND", "sim") == "nrt"

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def rms_norm_fn(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def test_the_announced_snippet(tmp_path):
    x = torch.randn(64, 256, dtype=torch.bfloat16, device="neuron")
    weight = torch.randn(256, dtype=torch.bfloat16, device="neuron")
    nc = NeuronConfig(modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME],
                      profile_output_dir=str(tmp_path), capture_enabled_for_nc="0",
                      correlate_device_time=True)
    exporter = NeuronProfiler(nc)
    with profile(activities=ACTIVITIES, experimental_config=nc, record_shapes=False,
                 on_trace_ready=exporter.export_trace,
                 schedule=torch.profiler.schedule(wait=2, warmup=1, active=1)) as prof:
        for _ in range(4):
            with torch.no_grad():
                _ = rms_norm_fn(x, weight)
            torch.neuron.synchronize()
            prof.step()
    averages = {event.key: event for event in prof.key_averages()}
    for op in ("aten::mul", "aten::mean", "aten::rsqrt"):
        assert averages[op].self_device_time_total > 0, op
    table = prof.key_averages().table(sort_by="self_privateuse1_time_total", row_limit=4)
    assert "aten::" in table

    paths = exporter.last_exported
    assert os.path.basename(paths["framework_trace"]).endswith(".pt.trace.json")
    with open(paths["framework_trace"]) as handle:
        events = json.load(handle)["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert kernels and all(e["args"]["engine"] for e in kernels)
    # Every kernel has its CPU-to-device arrow, and each arrow starts at a
    # runtime launch event on the CPU side.
    flow_ends = {e["id"] for e in events if e.get("ph") == "f" and e.get("cat") == "ac2g"}
    flow_starts = {e["id"] for e in events if e.get("ph") == "s" and e.get("cat") == "ac2g"}
    assert flow_ends and flow_ends == flow_starts
    assert any(e.get("name") == "neuronrtLaunch" for e in events)

    import pyarrow.parquet as pq

    capture = last_capture()
    device_commands = [c for c in capture["commands"] if c["engine"] != "Sync"]
    commands = pq.read_table(paths["commands"])
    assert commands.num_rows == len(device_commands) > 0
    assert {"correlation_id", "operator", "core", "stream", "engine", "start_ns", "duration_ns",
            "bytes"} <= set(commands.column_names)
    assert {"aten::mul", "aten::mean", "aten::rsqrt"} <= set(commands.column("operator").to_pylist())
    by_operator = pq.read_table(paths["operators"]).to_pylist()
    assert sum(row["count"] for row in by_operator) == commands.num_rows
    engines = {row["engine"] for row in pq.read_table(paths["engines"]).to_pylist()}
    if ON_NRT:
        assert "Host" in engines and not {"Vector", "Scalar", "Tensor"} & engines
    else:
        assert {"Vector", "Scalar"} <= engines
    with open(paths["system_trace"]) as handle:
        system = json.load(handle)
    assert any(e.get("ph") == "X" and e["name"] == "aten::rsqrt" for e in system["traceEvents"])


def test_device_time_follows_the_operators_engine_and_stream():
    a = torch.randn(128, 128, device="neuron")
    side = torch_neuronx.Stream()
    with profile(activities=ACTIVITIES) as prof:
        b = a @ a
        with torch.neuron.stream(side):
            c = torch.exp(a)
        torch.neuron.synchronize()
        host = b.cpu()
    capture = last_capture()
    # Launches carry the kernel's schema name ("aten::mm.out").
    by_name = {c["op_name"].split(".")[0]: c for c in capture["commands"]}
    assert by_name["aten::mm"]["engine"] == ("Host" if ON_NRT else "Tensor")
    assert by_name["aten::exp"]["engine"] == ("Host" if ON_NRT else "Scalar")
    assert by_name["aten::exp"]["stream"] != by_name["aten::mm"]["stream"]
    copies = [c for c in capture["commands"] if c["kind"] == "COPY"]
    assert copies and copies[-1]["engine"] == "DMA" and copies[-1]["bytes"] == host.numel() * 4
    assert all(c["end_ns"] >= c["start_ns"] > 0 for c in capture["commands"])
    streams = {(e.device_index, e.device_resource_id) for e in prof.events()
               if e.device_type == torch.autograd.DeviceType.PrivateUse1}
    assert len(streams) >= 2


def test_no_capture_without_the_device_activity():
    a = torch.randn(16, device="neuron")
    with profile(activities=ACTIVITIES):
        (a + 1).sum().item()
    before = len(last_capture()["commands"])
    assert before > 0
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        (a * 3).sum().item()
    assert len(last_capture()["commands"]) == before
    assert all(e.device_type == torch.autograd.DeviceType.CPU for e in prof.events())
    # Commands outside any window are not stamped: the next window holds
    # only its own.
    (a * 5).sum().item()
    with profile(activities=ACTIVITIES):
        torch.neuron.synchronize()
    assert last_capture()["commands"] == []


def test_capture_enabled_for_nc_names_devices():
    a = torch.randn(16, device="neuron")
    missing = torch_neuronx.device_count()
    with profile(activities=ACTIVITIES,
                 experimental_config=NeuronConfig(capture_enabled_for_nc=missing)):
        (a + 1).sum().item()
    capture = last_capture()
    assert capture["commands"] == []
    assert any(f"neuron:{missing} does not exist" in error for error in capture["errors"])


def test_neuron_config_refuses_bad_arguments():
    with pytest.raises(TypeError):
        NeuronConfig(not_an_option=1)
    with pytest.raises(ValueError, match="unknown profile mode"):
        NeuronConfig(modes=["GPU"])
    with pytest.raises(ValueError, match="capture_enabled_for_nc"):
        NeuronConfig(capture_enabled_for_nc="0-x")
    assert NeuronConfig(capture_enabled_for_nc="0,2-3").capture_enabled_for_nc == [0, 2, 3]
    with pytest.raises(TypeError):
        NeuronProfiler(object())


def test_export_without_pyarrow_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with profile(activities=ACTIVITIES) as prof:
        torch.ones(4, device="neuron").sum().item()
    with pytest.raises(ImportError, match=r"torch_neuronx\[profiling\]"):
        NeuronProfiler(NeuronConfig(profile_output_dir=str(tmp_path))).export_trace(prof)


def test_runtime_mode_records_executable_loads_and_staging():
    a = torch.randn(8, device="neuron")
    with profile(activities=ACTIVITIES,
                 experimental_config=NeuronConfig(modes=["device", "runtime"])) as prof:
        # An operator no test ran before: its executable loads in the window.
        torch.special.i1e(a).sum().item()
    spans = {s["name"]: s for s in last_capture()["spans"]}
    assert spans["load_executable"]["end_ns"] >= spans["load_executable"]["start_ns"]
    assert spans["load_executable"]["thread"] == 0
    assert spans["stage_out"]["thread"] != 0
    names = {e.name for e in prof.events()}
    assert {"neuron-rtd load_executable", "neuronrt stage_out"} <= names
    with profile(activities=ACTIVITIES):
        torch.special.i0e(a).sum().item()
    assert last_capture()["spans"] == []


def test_autograd_profiler_use_device_gives_device_time():
    a = torch.randn(64, 64, device="neuron")
    for use_kineto in (True, False):
        with torch.autograd.profiler.profile(use_device="neuron", use_kineto=use_kineto) as prof:
            (a @ a).sum().item()
        mm = [e for e in prof.function_events if e.name == "aten::mm"]
        assert mm and mm[0].device_time_total > 0, use_kineto


def test_elapsed_time_between_timing_events():
    a = torch.randn(256, 256, device="neuron")
    start = torch.Event(device="neuron", enable_timing=True)
    middle = torch_neuronx.Event(enable_timing=True)
    end = torch.Event(device="neuron", enable_timing=True)
    with profile(activities=ACTIVITIES):
        start.record()
        for _ in range(5):
            a = a @ a / 256
        middle.record()
        for _ in range(5):
            a = a @ a / 256
        end.record()
        end.synchronize()
    first, second, total = (start.elapsed_time(middle), middle.elapsed_time(end),
                            start.elapsed_time(end))
    assert first > 0 and second > 0
    assert total == pytest.approx(first + second, rel=1e-9, abs=1e-6)
    # The device time of the matmuls between the events fits inside them.
    mms = sorted((c for c in last_capture()["commands"] if c["op_name"].startswith("aten::mm")),
                 key=lambda c: c["start_ns"])
    assert len(mms) == 10
    assert sum(c["end_ns"] - c["start_ns"] for c in mms[:5]) / 1e6 <= first


def test_elapsed_time_needs_timing_events():
    # ValueError, as torch 2.13 raises for CUDA events (c10/cuda/CUDAEvent.h).
    plain, timed = torch.Event(device="neuron"), torch.Event(device="neuron", enable_timing=True)
    plain.record()
    timed.record()
    with pytest.raises(ValueError, match="enable_timing=True"):
        plain.elapsed_time(timed)
    assert isinstance(timed, torch_neuronx.Event) and not isinstance(
        torch.Event(device="cpu"), torch_neuronx.Event)
    unrecorded = torch.Event(device="neuron", enable_timing=True)
    with pytest.raises(ValueError, match="must be recorded"):
        timed.elapsed_time(unrecorded)


PROFILED_CHILD = textwrap.dedent("""
    import sys, torch, torch_neuronx
    from torch.profiler import profile, ProfilerActivity
    from torch_neuronx.profiling import last_capture
    op = getattr(torch, sys.argv[1])
    a = torch.randn(64, device="neuron")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]):
        for _ in range(50):
            a = op(a)
        a.sum().item()
    print(sorted({c["op_name"].split(".")[0] for c in last_capture()["commands"]
                  if c["kind"] == "LAUNCH"}))
""")


def test_two_processes_profiled_at_once_keep_their_records_apart():
    children = [subprocess.Popen([sys.executable, "-c", PROFILED_CHILD, name],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for name in ("sin", "cos")]
    outputs = [child.communicate(timeout=120) for child in children]
    for child, (out, err) in zip(children, outputs):
        assert child.returncode == 0, err
    sin_ops, cos_ops = (eval(out.strip().splitlines()[-1]) for out, _ in outputs)
    assert "aten::sin" in sin_ops and "aten::cos" not in sin_ops
    assert "aten::cos" in cos_ops and "aten::sin" not in cos_ops


def test_a_process_killed_mid_profile_leaves_no_session():
    script = textwrap.dedent("""
        import os, torch, torch_neuronx
        from torch.profiler import profile, ProfilerActivity
        a = torch.randn(64, device="neuron")
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])
        prof.start()
        for _ in range(200):
            a = a + 1
        a.sum().item()
        print(os.getpid(), flush=True)
        input()
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    pid = int(child.stdout.readline())
    sessions = [s for s in torch_neuronx._C._list_sessions() if s["pid"] == pid]
    assert len(sessions) == 1
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    child.stdout.close()
    child.stdin.close()
    # The daemon ends the session (and its profile buffer with it) when it
    # sees the data plane close: asynchronously, so ask until it has.
    deadline = time.monotonic() + 60
    while any(s["pid"] == pid for s in torch_neuronx._C._list_sessions()):
        assert time.monotonic() < deadline, "the killed process's session outlived it"


def test_profile_memory_reports_device_allocations():
    with profile(activities=ACTIVITIES, profile_memory=True) as prof:
        x = torch.empty(1 << 20, device="neuron")
        del x
    events = [e for e in prof.events() if e.name == "aten::empty"]
    assert events and events[0].device_memory_usage == 4 << 20
    assert any(e.name == "[memory]" and e.device_memory_usage == -(4 << 20)
               for e in prof.events())

"""NeuronProfiler: the framework trace, the daemon's system trace and Parquet
metrics of a torch.profiler window, side by side in one directory."""

import json
import os
import socket
import time

from torch.autograd import DeviceType

from torch_neuronx.profiling._config import NeuronConfig

_NS_PER_US = 1000.0


def last_capture():
    """The device records of the last ``torch.profiler`` window of this
    process, as plain data (None before the first): ``commands`` (one dict
    per device command: correlation_id, stream, sequence, core, kind,
    op_name, engine, failed, submit_ns, submit_thread, start_ns, end_ns,
    bytes), ``spans`` (the daemon's runtime spans), ``realtime_offset_ns``
    (add it to a CLOCK_MONOTONIC timestamp for Unix-epoch ns), ``cores``,
    ``dropped`` and ``errors``."""
    from torch_neuronx import _C

    return _C._profiler_last_capture()


def _require_pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as error:
        raise ImportError(
            "NeuronProfiler writes its metrics as Parquet, which needs pyarrow: "
            "pip install 'torch_neuronx[profiling]'"
        ) from error
    return pyarrow, pyarrow.parquet


def _operators_by_correlation(prof):
    """Kineto correlation id -> the CPU operator's name."""
    names = {}
    for event in prof.events():
        if event.device_type == DeviceType.CPU and event.id not in names:
            names[event.id] = event.name
    return names


class NeuronProfiler:
    """Exports a finished ``torch.profiler`` window. Use
    ``on_trace_ready=NeuronProfiler(config).export_trace``; each call writes,
    into ``config.profile_output_dir``:

    - ``<host>_<pid>.<ns>.pt.trace.json``: the framework trace (CPU operators
      and their device activities, as ``export_chrome_trace``), where
      TensorBoard's profiler plugin and Perfetto find it;
    - ``<host>_<pid>.<ns>.neuron_rtd.trace.json``: the system trace, one row
      per NeuronCore stream, plus the daemon's runtime spans;
    - ``<host>_<pid>.<ns>.neuron_commands.parquet``: one row per device
      command; ``...neuron_operators.parquet`` and
      ``...neuron_engines.parquet``: aggregated per operator and per engine.

    The paths written last are in :attr:`last_exported`.
    """

    def __init__(self, config=None):
        if config is not None and not isinstance(config, NeuronConfig):
            raise TypeError(f"NeuronProfiler takes a NeuronConfig, not {type(config).__name__}")
        self.config = config or NeuronConfig()
        self.last_exported = {}

    def export_trace(self, prof):
        pyarrow, parquet = _require_pyarrow()
        directory = self.config.profile_output_dir
        os.makedirs(directory, exist_ok=True)
        stem = os.path.join(directory, f"{socket.gethostname()}_{os.getpid()}.{time.time_ns()}")
        paths = {
            "framework_trace": f"{stem}.pt.trace.json",
            "system_trace": f"{stem}.neuron_rtd.trace.json",
            "commands": f"{stem}.neuron_commands.parquet",
            "operators": f"{stem}.neuron_operators.parquet",
            "engines": f"{stem}.neuron_engines.parquet",
        }
        prof.export_chrome_trace(paths["framework_trace"])
        capture = last_capture() or {
            "commands": [], "spans": [], "realtime_offset_ns": 0, "cores": [], "dropped": 0,
            "errors": [],
        }
        offset = capture["realtime_offset_ns"] if self.config.correlate_device_time else 0
        operators = _operators_by_correlation(prof)
        rows = self._command_rows(capture, operators, offset)
        with open(paths["system_trace"], "w") as out:
            json.dump(self._system_trace(capture, rows, offset), out)
        self._write_parquet(pyarrow, parquet, rows, paths)
        self.last_exported = paths
        return paths

    @staticmethod
    def _command_rows(capture, operators, offset):
        rows = []
        for command in capture["commands"]:
            if command["engine"] == "Sync":
                continue
            correlation = command["correlation_id"]
            rows.append({
                "correlation_id": correlation,
                "operator": operators.get(correlation, command["op_name"]),
                "op_name": command["op_name"],
                "kind": command["kind"],
                "core": command["core"],
                "stream": command["stream"],
                "sequence": command["sequence"],
                "engine": command["engine"],
                "start_ns": command["start_ns"] + offset,
                "duration_ns": command["end_ns"] - command["start_ns"],
                "queue_wait_ns": (command["start_ns"] - command["submit_ns"]
                                  if command["submit_ns"] else None),
                "bytes": command["bytes"],
                "failed": command["failed"],
            })
        return rows

    @staticmethod
    def _system_trace(capture, rows, offset):
        pid = os.getpid()
        events = [{"name": "process_name", "ph": "M", "pid": f"neuron-rtd core {core}",
                   "args": {"name": f"NeuronCore {core} (neuron-rtd)"}}
                  for core in sorted({row["core"] for row in rows})]
        for row in rows:
            events.append({
                "name": row["operator"], "cat": row["kind"].lower(), "ph": "X",
                "pid": f"neuron-rtd core {row['core']}", "tid": f"stream {row['stream']}",
                "ts": row["start_ns"] / _NS_PER_US, "dur": row["duration_ns"] / _NS_PER_US,
                "args": {key: row[key] for key in
                         ("engine", "correlation_id", "sequence", "bytes", "queue_wait_ns",
                          "failed")},
            })
        for span in capture["spans"]:
            events.append({
                "name": span["name"], "cat": "runtime", "ph": "X",
                "pid": f"runtime (pid {pid})",
                "tid": f"thread {span['thread']}" if span["thread"] else "neuron-rtd",
                "ts": (span["start_ns"] + offset) / _NS_PER_US,
                "dur": (span["end_ns"] - span["start_ns"]) / _NS_PER_US,
                "args": {"detail": span["detail"]},
            })
        return {"traceEvents": events, "displayTimeUnit": "ns",
                "otherData": {"dropped_records": capture["dropped"],
                              "errors": capture["errors"]}}

    @staticmethod
    def _write_parquet(pyarrow, parquet, rows, paths):
        schema = pyarrow.schema([
            ("correlation_id", pyarrow.uint64()), ("operator", pyarrow.string()),
            ("op_name", pyarrow.string()), ("kind", pyarrow.string()),
            ("core", pyarrow.uint32()), ("stream", pyarrow.uint64()),
            ("sequence", pyarrow.uint64()), ("engine", pyarrow.string()),
            ("start_ns", pyarrow.int64()), ("duration_ns", pyarrow.int64()),
            ("queue_wait_ns", pyarrow.int64()), ("bytes", pyarrow.uint64()),
            ("failed", pyarrow.bool_()),
        ])
        parquet.write_table(pyarrow.Table.from_pylist(rows, schema=schema), paths["commands"])
        for key, column in (("operators", "operator"), ("engines", "engine")):
            totals = {}
            for row in rows:
                entry = totals.setdefault(row[column], [0, 0, 0])
                entry[0] += 1
                entry[1] += row["duration_ns"]
                entry[2] += row["bytes"]
            device_total = sum(entry[1] for entry in totals.values()) or 1
            table = pyarrow.Table.from_pylist(
                [{column: name, "count": count, "total_ns": total,
                  "mean_ns": total / count, "share": total / device_total, "bytes": moved}
                 for name, (count, total, moved) in sorted(
                     totals.items(), key=lambda item: -item[1][1])],
                schema=pyarrow.schema([
                    (column, pyarrow.string()), ("count", pyarrow.int64()),
                    ("total_ns", pyarrow.int64()), ("mean_ns", pyarrow.float64()),
                    ("share", pyarrow.float64()), ("bytes", pyarrow.uint64())]))
            parquet.write_table(table, paths[key])

#include "csrc/python/ProfilerBindings.h"

#include <pybind11/stl.h>

#include "csrc/profiler/Capture.h"
#include "neuron/rtd/abi/command_ring.h"

namespace torch_neuronx {

void BindProfiler(pybind11::module& module) {
  namespace py = pybind11;
  // The last torch.profiler window's device records as plain Python data
  // (None before the first): {"realtime_offset_ns", "commands": [dict],
  // "spans": [dict], "dropped", "errors"}. Timestamps are CLOCK_MONOTONIC
  // ns; add realtime_offset_ns for Unix-epoch ns.
  module.def("_profiler_last_capture", []() -> py::object {
    std::shared_ptr<const profiler::Capture> capture = profiler::LastCapture();
    if (capture == nullptr) return py::none();
    py::list commands;
    for (const neuronrt::ProfiledCommand& command : capture->records.commands) {
      py::dict row;
      row["correlation_id"] = command.correlation_id;
      row["stream"] = command.stream_id;
      row["sequence"] = command.sequence;
      row["core"] = command.core;
      row["kind"] = neuron_rtd_opcode_name(command.opcode);
      row["op_name"] = py::bytes(command.op_name).attr("decode")("utf-8", "replace");
      row["engine"] = neuronrt::EngineName(command.engine);
      row["failed"] = command.failed;
      row["submit_ns"] = command.submit_ns;
      row["submit_thread"] = command.submit_thread;
      row["start_ns"] = command.start_ns;
      row["end_ns"] = command.end_ns;
      row["bytes"] = command.bytes;
      commands.append(std::move(row));
    }
    py::list spans;
    for (const neuronrt::RuntimeSpan& span : capture->records.spans) {
      py::dict row;
      row["name"] = span.name;
      row["detail"] = py::bytes(span.detail).attr("decode")("utf-8", "replace");
      row["start_ns"] = span.start_ns;
      row["end_ns"] = span.end_ns;
      row["thread"] = span.thread;
      spans.append(std::move(row));
    }
    py::dict result;
    result["realtime_offset_ns"] = capture->realtime_offset_ns;
    result["cores"] = capture->cores;
    result["commands"] = std::move(commands);
    result["spans"] = std::move(spans);
    result["dropped"] = capture->records.dropped;
    result["errors"] = capture->errors;
    return result;
  });
}

}  // namespace torch_neuronx

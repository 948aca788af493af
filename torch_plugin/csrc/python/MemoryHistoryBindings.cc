#include "csrc/python/MemoryHistoryBindings.h"

#include <pybind11/stl.h>
#include <torch/csrc/profiler/combined_traceback.h>
#include <torch/csrc/profiler/python/combined_traceback.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "csrc/runtime/NeuronAllocator.h"

namespace torch_neuronx {
namespace {

namespace py = pybind11;

HistoryOptions::Record RecordOption(const std::optional<std::string>& enabled) {
  if (!enabled) return HistoryOptions::Record::kNone;
  if (*enabled == "state") return HistoryOptions::Record::kState;
  if (*enabled == "all") return HistoryOptions::Record::kAll;
  TORCH_CHECK_VALUE(false, "_record_memory_history: enabled must be None, 'state' or 'all'; got '",
                    *enabled, "'");
}

HistoryOptions::Context ContextOption(const std::optional<std::string>& context) {
  if (!context) return HistoryOptions::Context::kNone;
  if (*context == "state") return HistoryOptions::Context::kState;
  if (*context == "alloc") return HistoryOptions::Context::kAlloc;
  if (*context == "all") return HistoryOptions::Context::kAll;
  TORCH_CHECK_VALUE(false,
                    "_record_memory_history: context must be None, 'state', 'alloc' or 'all'; "
                    "got '", *context, "'");
}

void RecordMemoryHistory(const std::optional<std::string>& enabled,
                         const std::optional<std::string>& context, const std::string& stacks,
                         int64_t max_entries, bool clear_history,
                         const std::vector<std::string>& skip_actions) {
  HistoryOptions options{.record = RecordOption(enabled),
                         .context = ContextOption(enabled ? context : std::nullopt),
                         .clear_history = clear_history};
  TORCH_CHECK_VALUE(stacks == "python" || stacks == "all",
                    "_record_memory_history: stacks must be 'python' or 'all'; got '", stacks,
                    "'");
  TORCH_CHECK_VALUE(max_entries >= 0, "_record_memory_history: max_entries must be >= 0; got ",
                    max_entries);
  options.cpp_frames = stacks == "all";
  options.max_entries = static_cast<size_t>(max_entries);
  for (const std::string& name : skip_actions) {
    bool known = false;
    std::vector<std::string> names;
    for (int action = 0; action < kTraceActionCount; ++action) {
      const std::string_view action_name = TraceActionName(static_cast<TraceAction>(action));
      names.emplace_back(action_name);
      if (name == action_name) options.skip[action] = known = true;
    }
    TORCH_CHECK_VALUE(known, "_record_memory_history: unknown action '", name,
                      "' in skip_actions; actions are ", absl::StrJoin(names, ", "));
  }
  StackGatherer gatherer;
  if (options.context != HistoryOptions::Context::kNone) {
    torch::installCapturedTracebackPython();
    gatherer = [](bool cpp_frames) -> std::shared_ptr<c10::GatheredContext> {
      return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true, cpp_frames);
    };
  }
  ConfigureAllocatorHistory(options, std::move(gatherer));
}

const char* StateName(BlockSnapshot::State state) {
  switch (state) {
    case BlockSnapshot::State::kActiveAllocated:
      return "active_allocated";
    case BlockSnapshot::State::kActivePendingFree:
      return "active_pending_free";
    case BlockSnapshot::State::kInactive:
      return "inactive";
  }
  return "inactive";
}

// Symbolizes every stack of the snapshot in one batch (frames shared by
// many stacks are read once), then hands each dictionary its "frames".
class Frames {
 public:
  void Add(const std::shared_ptr<c10::GatheredContext>& context, py::dict target) {
    if (context == nullptr) {
      target["frames"] = py::list();
      return;
    }
    tracebacks_.push_back(torch::getCapturedTracebackFromContext(context));
    targets_.push_back(std::move(target));
  }

  void Fill() {
    std::vector<py::object> frames = torch::py_symbolize(tracebacks_);
    for (size_t i = 0; i < frames.size(); ++i) targets_[i]["frames"] = frames[i];
    torch::freeDeadCapturedTracebackFrames();
  }

 private:
  std::vector<torch::CapturedTraceback*> tracebacks_;
  std::vector<py::dict> targets_;
};

py::dict SnapshotDict() {
  MemorySnapshot snapshot;
  {
    py::gil_scoped_release no_gil;
    snapshot = TakeMemorySnapshot();
  }
  Frames frames;
  py::list segments;
  for (const SegmentSnapshot& segment : snapshot.segments) {
    py::dict row;
    row["device"] = segment.device;
    row["address"] = segment.address;
    row["total_size"] = segment.total_size;
    row["allocated_size"] = segment.allocated;
    row["active_size"] = segment.active;
    row["requested_size"] = segment.requested;
    row["stream"] = segment.stream;
    row["segment_type"] = segment.small ? "small" : "large";
    row["segment_pool_id"] = py::make_tuple(0, 0);
    row["is_expandable"] = false;
    frames.Add(segment.context, row);
    py::list blocks;
    for (const BlockSnapshot& block : segment.blocks) {
      py::dict block_row;
      block_row["address"] = block.address;
      block_row["size"] = block.size;
      block_row["requested_size"] = block.requested;
      block_row["state"] = StateName(block.state);
      frames.Add(block.context, block_row);
      blocks.append(block_row);
    }
    row["blocks"] = blocks;
    segments.append(row);
  }
  py::list device_traces;
  for (const std::vector<TraceEntry>& trace : snapshot.device_traces) {
    py::list entries;
    for (const TraceEntry& entry : trace) {
      py::dict row;
      row["action"] = std::string(TraceActionName(entry.action));
      row["addr"] = entry.address;
      row["size"] = entry.size;
      row["stream"] = entry.stream;
      row["time_us"] = entry.time_us;
      row["pool_id"] = py::make_tuple(0, 0);
      if (entry.action == TraceAction::kOom) row["device_free"] = entry.device_free;
      frames.Add(entry.context, row);
      entries.append(row);
    }
    device_traces.append(entries);
  }
  frames.Fill();
  py::dict result;
  result["segments"] = segments;
  result["device_traces"] = device_traces;
  return result;
}

}  // namespace

void BindMemoryHistory(py::module& module) {
  module.def("_record_memory_history", &RecordMemoryHistory, py::arg("enabled"),
             py::arg("context"), py::arg("stacks"), py::arg("max_entries"),
             py::arg("clear_history"), py::arg("skip_actions"));
  module.def("_memory_snapshot", &SnapshotDict);
}

}  // namespace torch_neuronx

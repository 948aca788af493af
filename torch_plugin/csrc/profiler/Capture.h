// What the neuron profiler captured in its last torch.profiler window: the
// daemon's stamped commands and runtime spans, for torch_neuronx.profiling
// (the system trace and the Parquet metrics). No Kineto or PyTorch headers.
#ifndef TORCH_NEURONX_CSRC_PROFILER_CAPTURE_H_
#define TORCH_NEURONX_CSRC_PROFILER_CAPTURE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "neuronrt/profiling.h"

namespace torch_neuronx::profiler {

// Which commands a capture records; parsed from torch's
// custom_profiler_config (NeuronConfig writes it).
struct CaptureOptions {
  bool device = true;
  bool runtime_spans = false;
  // Torch device indices (neuron:i) captured; empty: every device.
  std::vector<int> devices;
};

struct Capture {
  CaptureOptions options;
  // CLOCK_REALTIME minus CLOCK_MONOTONIC at the start, in ns: added to a
  // record's timestamps gives Unix-epoch ns, the clock of the trace.
  int64_t realtime_offset_ns = 0;
  // The session's cores: commands' `core` is one of them; its position is
  // the torch device index.
  std::vector<uint32_t> cores;
  neuronrt::ProfileRecords records;
  std::vector<std::string> errors;
};

// Parses NeuronConfig's JSON ({"neuron": {...}}); invalid settings become
// errors the capture reports.
CaptureOptions ParseCaptureOptions(const std::string& custom_config,
                                   std::vector<std::string>& errors);

// The last finished capture of this process (nullptr before the first).
// Thread-safety: any thread; the capture is immutable once published.
std::shared_ptr<const Capture> LastCapture();
void PublishCapture(std::shared_ptr<const Capture> capture);

}  // namespace torch_neuronx::profiler

#endif  // TORCH_NEURONX_CSRC_PROFILER_CAPTURE_H_

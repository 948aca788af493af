#include "csrc/profiler/Capture.h"

#include <mutex>

#include "nlohmann/json.hpp"

namespace torch_neuronx::profiler {
namespace {

std::mutex last_mutex;
std::shared_ptr<const Capture> last;

}  // namespace

CaptureOptions ParseCaptureOptions(const std::string& custom_config,
                                   std::vector<std::string>& errors) {
  CaptureOptions options;
  if (custom_config.empty()) return options;
  const nlohmann::json parsed = nlohmann::json::parse(custom_config, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("neuron")) {
    return options;  // another backend's configuration, or none
  }
  const nlohmann::json& neuron = parsed["neuron"];
  if (!neuron.is_object()) {
    errors.push_back("custom_profiler_config: \"neuron\" must be an object");
    return options;
  }
  if (auto modes = neuron.find("modes"); modes != neuron.end() && modes->is_array()) {
    options.device = false;
    for (const nlohmann::json& mode : *modes) {
      if (mode == "device") options.device = true;
      if (mode == "runtime") options.runtime_spans = true;
    }
  }
  if (auto devices = neuron.find("devices"); devices != neuron.end()) {
    if (!devices->is_array()) {
      errors.push_back("custom_profiler_config: \"devices\" must be a list of device indices");
      return options;
    }
    for (const nlohmann::json& device : *devices) {
      if (!device.is_number_integer() || device.get<int64_t>() < 0) {
        errors.push_back("custom_profiler_config: device indices must be integers >= 0");
        continue;
      }
      options.devices.push_back(device.get<int>());
    }
  }
  return options;
}

std::shared_ptr<const Capture> LastCapture() {
  std::lock_guard<std::mutex> lock(last_mutex);
  return last;
}

void PublishCapture(std::shared_ptr<const Capture> capture) {
  std::lock_guard<std::mutex> lock(last_mutex);
  last = std::move(capture);
}

}  // namespace torch_neuronx::profiler

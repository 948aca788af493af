#include "daemon/hal/device.h"

namespace neuron::rtd::hal {

uint32_t Backend::total_logical_cores() const {
  uint32_t total = 0;
  for (const Device* device : devices()) total += device->info().logical_cores();
  return total;
}

std::string_view ArchitectureName(Architecture architecture) {
  switch (architecture) {
    case Architecture::kTrainium2:
      return "trainium2";
    case Architecture::kTrainium3:
      return "trainium3";
  }
  return "unknown";
}

std::string_view BackendKindName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kSim:
      return "sim";
    case BackendKind::kHardware:
      return "hardware";
  }
  return "unknown";
}

}  // namespace neuron::rtd::hal

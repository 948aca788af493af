// Device memory of a chip's cores by what it holds, as the Neuron driver
// serves the runtime's accounting in sysfs (what neuron-top and
// neuron-monitor's memory_used show): neuron<N>/neuron_core<C>/stats/
// memory_usage/device_mem/<category>/{present,total,peak}, each a decimal
// and a newline, readable by every user. Categories (driver 2.2x): model_code,
// tensors, constants, model_shared_scratchpad, nonshared_scratchpad,
// runtime_memory, driver_memory, collectives, notifications, dma_rings,
// uncategorized. C is the chip's physical core: a logical core of LNC=2 is
// two of them, and the runtime may charge either.
#ifndef NEURON_RTD_DAEMON_HAL_NRT_SYSFS_MEMORY_H_
#define NEURON_RTD_DAEMON_HAL_NRT_SYSFS_MEMORY_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace neuron::rtd::hal::nrt {

// Bytes present now, summed over the cores asked for.
struct SysfsMemoryUsage {
  // Tensors the runtime allocated (the daemon's segments among them).
  uint64_t tensors = 0;
  uint64_t model_code = 0;
  uint64_t constants = 0;
  // Shared and non-shared scratchpads of loaded programs.
  uint64_t scratchpad = 0;
  // Everything else: the runtime's and the driver's own, collectives'
  // buffers, notification queues, DMA rings, uncategorized.
  uint64_t other = 0;

  uint64_t total() const { return tensors + model_code + constants + scratchpad + other; }
};

// The usage of chip `device_dir`'s physical cores `cores`; nullopt when a
// core has no readable category (a driver without the nodes, or a tree that
// is not there). A category file missing or not a decimal counts as 0.
std::optional<SysfsMemoryUsage> ReadSysfsMemoryUsage(const std::string& device_dir,
                                                     std::span<const uint32_t> cores);

}  // namespace neuron::rtd::hal::nrt

#endif  // NEURON_RTD_DAEMON_HAL_NRT_SYSFS_MEMORY_H_

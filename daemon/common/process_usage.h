// The daemon process's own CPU time and memory, for Admin.GetStats.
#ifndef NEURON_RTD_DAEMON_COMMON_PROCESS_USAGE_H_
#define NEURON_RTD_DAEMON_COMMON_PROCESS_USAGE_H_

#include <cstdint>

namespace neuron::rtd {

struct ProcessUsage {
  double cpu_user_seconds = 0;
  double cpu_system_seconds = 0;
  uint64_t resident_memory_bytes = 0;
};

// Of the calling process (getrusage, /proc/self/statm); a figure the kernel
// will not give is left 0.
ProcessUsage ReadProcessUsage();

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_COMMON_PROCESS_USAGE_H_

// What the queue reports about a command whose record carried the PROFILE
// flag, and the daemon's own spans of work for a profiling session.
#ifndef NEURON_RTD_DAEMON_QUEUE_PROFILED_COMMAND_H_
#define NEURON_RTD_DAEMON_QUEUE_PROFILED_COMMAND_H_

#include <cstdint>
#include <string>

#include "daemon/hal/engine.h"

namespace neuron::rtd::queue {

// Timestamps are CLOCK_MONOTONIC nanoseconds (the queue's default clock),
// shared by every core and every process of the host.
struct ProfiledCommand {
  uint64_t correlation_id = 0;
  uint64_t stream_id = 0;
  uint64_t sequence = 0;
  uint32_t core = 0;
  uint16_t opcode = 0;
  hal::Engine engine = hal::Engine::kUnspecified;
  bool failed = false;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint64_t bytes = 0;
  std::string op_name;
};

struct RuntimeSpan {
  std::string name;
  std::string detail;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

}  // namespace neuron::rtd::queue

#endif  // NEURON_RTD_DAEMON_QUEUE_PROFILED_COMMAND_H_

// An executable loaded into the daemon: data (an operator and its argument
// layouts), never code, with what the backend prepared from it.
#ifndef NEURON_RTD_DAEMON_EXEC_EXECUTABLE_H_
#define NEURON_RTD_DAEMON_EXEC_EXECUTABLE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "daemon/hal/eager_op.h"
#include "daemon/hal/executable.h"

namespace neuron::rtd::exec {

// Immutable once cached; shared by the cache, the sessions that hold it and
// the launches running it.
struct Executable {
  uint64_t id = 0;
  std::string content_hash;
  std::string name;
  // Of the serialized body.
  uint64_t size_bytes = 0;
  hal::EagerOpPlan plan;
  // LAUNCH must pass at least this many addresses.
  uint32_t address_count = 0;
  // What the backend prepared from `plan` at load.
  std::shared_ptr<const hal::Executable> prepared;
};

}  // namespace neuron::rtd::exec

#endif  // NEURON_RTD_DAEMON_EXEC_EXECUTABLE_H_

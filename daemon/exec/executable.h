// An executable loaded into the daemon: data (an operator and its argument
// layouts, or a graph of operators), never code, with what the backend
// prepared from it.
#ifndef NEURON_RTD_DAEMON_EXEC_EXECUTABLE_H_
#define NEURON_RTD_DAEMON_EXEC_EXECUTABLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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
  hal::ExecutableSpec spec;
  // "aten::add" or "graph 'forward_3'", for messages.
  std::string description;
  // Every tensor a LAUNCH reads or writes at one of its addresses (an eager
  // op's arguments and outputs, a graph's inputs and outputs): the launch
  // checks each extent against the launching session's memory.
  std::vector<hal::TensorLayout> launch_tensors;
  // LAUNCH must pass at least this many addresses.
  uint32_t address_count = 0;
  // What the backend prepared from `spec` at load.
  std::shared_ptr<const hal::Executable> prepared;
};

}  // namespace neuron::rtd::exec

#endif  // NEURON_RTD_DAEMON_EXEC_EXECUTABLE_H_

// What a command does, as far as the device layer needs to know it: the
// command ring's opcodes are the wire format of the layer above (queue/),
// which maps each to one of these.
#ifndef NEURON_RTD_DAEMON_HAL_COMMAND_KIND_H_
#define NEURON_RTD_DAEMON_HAL_COMMAND_KIND_H_

#include <cstdint>

namespace neuron::rtd::hal {

enum class CommandKind : uint8_t {
  kTransfer,    // a copy or a fill: DMA
  kCollective,  // a collective operation between ranks
  kLaunch,      // an executable run on the core
  kSync,        // waits, signals and the other commands that only order work
};

}  // namespace neuron::rtd::hal

#endif  // NEURON_RTD_DAEMON_HAL_COMMAND_KIND_H_

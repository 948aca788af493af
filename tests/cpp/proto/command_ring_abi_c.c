/* Compiles the ABI header as C11: a C client or tool may include it. */
#include "neuron/rtd/abi/command_ring.h"

uint32_t neuron_rtd_abi_c_record_length(uint32_t payload, uint32_t name) {
  return neuron_rtd_record_length(payload, name);
}

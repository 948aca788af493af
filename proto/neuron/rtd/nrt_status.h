// The one mapping between the data plane's status codes (NEURON_RTD_STATUS_*,
// the values of neuron.rtd.v1.NrtStatus) and absl::StatusCode: the daemon
// publishes a command's failure as the former, libneuronrt returns the latter.
#ifndef NEURON_RTD_NRT_STATUS_H_
#define NEURON_RTD_NRT_STATUS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "neuron/rtd/abi/command_ring.h"

namespace neuron::rtd {

inline int32_t NrtStatusFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return NEURON_RTD_STATUS_SUCCESS;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
      return NEURON_RTD_STATUS_INVALID;
    case absl::StatusCode::kOutOfRange:
      return NEURON_RTD_STATUS_EXEC_OOB;
    case absl::StatusCode::kResourceExhausted:
      return NEURON_RTD_STATUS_RESOURCE;
    default:
      return NEURON_RTD_STATUS_FAILURE;
  }
}

inline absl::StatusCode StatusCodeFor(int32_t nrt_status) {
  switch (nrt_status) {
    case NEURON_RTD_STATUS_SUCCESS:
      return absl::StatusCode::kOk;
    case NEURON_RTD_STATUS_INVALID:
    case NEURON_RTD_STATUS_INVALID_HANDLE:
    case NEURON_RTD_STATUS_EXEC_BAD_INPUT:
      return absl::StatusCode::kInvalidArgument;
    case NEURON_RTD_STATUS_RESOURCE:
      return absl::StatusCode::kResourceExhausted;
    case NEURON_RTD_STATUS_EXEC_OOB:
      return absl::StatusCode::kOutOfRange;
    case NEURON_RTD_STATUS_TIMEOUT:
      return absl::StatusCode::kDeadlineExceeded;
    case NEURON_RTD_STATUS_CLOSED:
      return absl::StatusCode::kAborted;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace neuron::rtd

#endif  // NEURON_RTD_NRT_STATUS_H_

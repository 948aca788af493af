// Decoding and bounding an executable body sent by a client.
#ifndef NEURON_RTD_DAEMON_EXEC_EXECUTABLE_DECODER_H_
#define NEURON_RTD_DAEMON_EXEC_EXECUTABLE_DECODER_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "daemon/exec/executable.h"

namespace neuron::rtd::exec {

// What a body must hold (the kind its loader announced).
enum class ExecutableBodyKind { kEagerOp, kGraph };

// Parses `body` (a serialized neuron.rtd.v1.ExecutableBody) into a plan and
// bounds every field (docs/design/executables.md lists the bounds); a graph's
// nodes refer only to values defined before them. INVALID_ARGUMENT naming
// the field; PERMISSION_DENIED for an operator that reaches outside device
// memory. Leaves id, hash, name, size and the prepared form empty.
absl::StatusOr<Executable> DecodeExecutable(std::string_view body, ExecutableBodyKind kind);

}  // namespace neuron::rtd::exec

#endif  // NEURON_RTD_DAEMON_EXEC_EXECUTABLE_DECODER_H_

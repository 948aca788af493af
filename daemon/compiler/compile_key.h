// What a compiled package's key is made of. The key is a digest of the
// parts; the parts are stored beside each package, so that a miss can be
// explained (`neuronctl cache why`): which part differs from the packages
// that are there.
#ifndef NEURON_RTD_DAEMON_COMPILER_COMPILE_KEY_H_
#define NEURON_RTD_DAEMON_COMPILER_COMPILE_KEY_H_

#include <string>

#include "absl/strings/str_format.h"
#include "neuron/rtd/content_hash.h"

namespace neuron::rtd::compiler {

struct CompileKey {
  std::string graph;           // content hash of the graph's JSON
  std::string torch_version;   // the daemon's (and so the worker's) torch
  std::string compiler_flags;  // what the worker does to a graph besides compiling it
  std::string cpu;             // HostCpuId(): compiled code targets the CPU it was built on

  // The key packages are stored and found under.
  std::string Digest() const {
    return ContentHash(absl::StrFormat("graph %s\ntorch %s\nflags %s\ncpu %s\n", graph,
                                       torch_version, compiler_flags, cpu));
  }
};

}  // namespace neuron::rtd::compiler

#endif  // NEURON_RTD_DAEMON_COMPILER_COMPILE_KEY_H_

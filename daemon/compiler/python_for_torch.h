// Which Python interpreter has the torch that the daemon's simulated device
// runs: the compiler worker must import the same torch (compiled graphs are
// built against its headers and run by its kernels). The sim plugin knows
// where the libtorch it loaded lies; the interpreter that installed it is
// found from that path, so a daemon started by hand, by systemd or by the
// plugin compiles alike, whatever `python3` on PATH is.
#ifndef NEURON_RTD_DAEMON_COMPILER_PYTHON_FOR_TORCH_H_
#define NEURON_RTD_DAEMON_COMPILER_PYTHON_FOR_TORCH_H_

#include <string>
#include <string_view>
#include <vector>

namespace neuron::rtd::compiler {

// The interpreters that may have installed the torch whose shared libraries
// are in `torch_library_dir` (".../site-packages/torch/lib"), most likely
// first, without checking that they exist:
//   <prefix>/lib/python3.X/site-packages/torch/lib  (a venv, a pyenv or a
//     prefix install)  -> <prefix>/bin/python3.X, <prefix>/bin/python3
//   <prefix>/lib/python3/dist-packages/torch/lib     (Debian's packages)
//   <prefix>/local/lib/python3.X/dist-packages/...   (pip as root on Debian)
//     -> <prefix>/bin/python3.X, <prefix>/bin/python3
// Empty when the path is not inside a Python library directory (a libtorch
// unpacked on its own has no interpreter).
std::vector<std::string> PythonCandidatesForTorch(std::string_view torch_library_dir);

}  // namespace neuron::rtd::compiler

#endif  // NEURON_RTD_DAEMON_COMPILER_PYTHON_FOR_TORCH_H_

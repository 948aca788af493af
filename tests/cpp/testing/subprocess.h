// Child processes for tests: neuron-rtd started as a real daemon (readiness
// by the systemd notify protocol, never by sleeping), and commands run to
// completion with their output captured.
#ifndef NEURON_TESTS_TESTING_SUBPROCESS_H_
#define NEURON_TESTS_TESTING_SUBPROCESS_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "testing/temp_dir.h"

namespace neuron::testing {

// Paths of the binaries under test, from the build.
std::string NeuronRtdBinary();
std::string NeuronctlBinary();
std::string ClientProbeBinary();

// Variables set for the child on top of this process's environment; nullopt
// removes one.
using Environment = std::map<std::string, std::optional<std::string>>;

// A running process whose stdout and stderr go to files.
// Lifetime: the destructor kills (SIGKILL) and reaps a process still running.
class Subprocess {
 public:
  static absl::StatusOr<std::unique_ptr<Subprocess>> Spawn(const std::vector<std::string>& argv,
                                                           const Environment& extra_env = {});
  ~Subprocess();

  pid_t pid() const { return pid_; }
  void Signal(int signal_number) const;

  // The exit code (128 + N when killed by signal N); DEADLINE_EXCEEDED when
  // it is still running after `timeout`.
  absl::StatusOr<int> Wait(absl::Duration timeout = absl::Seconds(30));

  // Sleeps until the process writes READY=1 to its $NOTIFY_SOCKET (set by
  // Spawn). FAILED_PRECONDITION, with its stderr, when it exits first.
  absl::Status WaitReady(absl::Duration timeout = absl::Seconds(30));

  std::string Stdout() const;
  std::string Stderr() const;

 private:
  Subprocess() = default;

  std::unique_ptr<TempDir> dir_;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  int notify_fd_ = -1;
  bool reaped_ = false;
  int exit_code_ = -1;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs argv to completion (at most 60 s).
CommandResult RunCommand(const std::vector<std::string>& argv, const Environment& extra_env = {});

// The command line of neuron-rtd with `args`. Without --config in `args` it
// reads an empty configuration, so that no /etc/neuron-rtd/neuron-rtd.toml on
// the machine changes what a test sees.
std::vector<std::string> DaemonArgv(const std::vector<std::string>& args);

// Starts neuron-rtd with `args` and waits until it is ready.
absl::StatusOr<std::unique_ptr<Subprocess>> StartDaemon(const std::vector<std::string>& args,
                                                        const Environment& extra_env = {});

}  // namespace neuron::testing

#endif  // NEURON_TESTS_TESTING_SUBPROCESS_H_

// `neuronctl top`: a live view of the daemon's cores and sessions, redrawn in
// place until `q` or Ctrl-C (the terminal is restored either way); in batch
// mode (-b, or --json) frames are printed one after another.
#ifndef NEURONCTL_TOP_H_
#define NEURONCTL_TOP_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "neuronrt/client.h"

namespace neuronctl {

struct TopOptions {
  absl::Duration interval = absl::Seconds(1);
  // Frames to draw; 0: until interrupted.
  int frames = 0;
  bool batch = false;
  // One JSON object a line per frame (batch implied).
  bool json = false;
  // How the daemon's address is shown.
  std::string target;
};

// Runs until the frames are drawn, the user quits, or a call fails (its
// status is returned).
absl::Status RunTop(const neuronrt::Client& client, const TopOptions& options);

}  // namespace neuronctl

#endif  // NEURONCTL_TOP_H_

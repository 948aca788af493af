// `neuronctl top`'s frames: what the daemon reported at one moment, and the
// frame drawn from it (and the moment before, for rates). Pure functions of
// their snapshots, so a frame can be tested against its expected text.
#ifndef NEURONCTL_TOP_FRAME_H_
#define NEURONCTL_TOP_FRAME_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "neuronrt/device_info.h"
#include "neuronrt/stats.h"

namespace neuronctl {

struct TopSnapshot {
  // When it was taken: CLOCK_MONOTONIC for rates, the wall clock to show.
  int64_t monotonic_ns = 0;
  int64_t unix_ms = 0;
  std::string target;
  neuronrt::HealthInfo health;
  std::vector<neuronrt::DeviceInfo> devices;
  std::vector<neuronrt::CoreStats> cores;
  std::vector<neuronrt::SessionInfo> sessions;
  // Names of the sessions' users, by uid (the uid where it has none).
  std::map<uint32_t, std::string> user_names;
};

// The frame for `now`; rates (commands per second) need `previous` (null for
// the first frame: they show "-"). Lines are cut at `columns` (0: never).
std::string RenderTopFrame(const TopSnapshot& now, const TopSnapshot* previous, int columns);
// The same as one JSON object (rates null without `previous`).
nlohmann::json TopFrameJson(const TopSnapshot& now, const TopSnapshot* previous);

}  // namespace neuronctl

#endif  // NEURONCTL_TOP_FRAME_H_

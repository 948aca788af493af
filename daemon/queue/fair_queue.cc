#include "daemon/queue/fair_queue.h"

#include <algorithm>
#include <tuple>

namespace neuron::rtd::queue {

int AgedPriority(int priority, int highest, std::chrono::nanoseconds waited,
                 std::chrono::nanoseconds aging) {
  if (priority <= highest || aging.count() <= 0 || waited.count() <= 0) return priority;
  const int64_t levels = waited / aging;
  return static_cast<int>(std::max<int64_t>(highest, int64_t{priority} - levels));
}

FairQueue::SessionState& FairQueue::StateOf(uint64_t session_id) {
  auto [it, inserted] = sessions_.try_emplace(session_id);
  // A newcomer starts level with the others: neither ahead nor owed.
  if (inserted) it->second.virtual_time = clock_;
  return it->second;
}

bool FairQueue::WithinLead(const SessionState& state) const {
  return state.virtual_time <= clock_ + options_.priority_lead;
}

size_t FairQueue::Pick(std::span<const Contender> contenders) {
  ++picks_;
  // The virtual times of sessions that contended at the previous pick too
  // are current however long its turn ran (a session alone keeps the core
  // for as long as it has work, in one turn): the clock catches up with
  // them before newcomers and sleepers are placed against it, or they would
  // be owed the whole turn.
  std::chrono::nanoseconds contending_least = std::chrono::nanoseconds::max();
  for (const Contender& contender : contenders) {
    auto it = sessions_.find(contender.session_id);
    if (it != sessions_.end() && it->second.last_pick + 1 == picks_) {
      contending_least = std::min(contending_least, it->second.virtual_time);
    }
  }
  if (contending_least != std::chrono::nanoseconds::max()) {
    clock_ = std::max(clock_, contending_least);
  }
  std::chrono::nanoseconds least = std::chrono::nanoseconds::max();
  for (const Contender& contender : contenders) {
    auto [it, inserted] = sessions_.try_emplace(contender.session_id);
    SessionState& state = it->second;
    // A newcomer is placed as a sleeper comes back: at most a quantum behind
    // the clock, so it goes next without being owed more than that.
    if (inserted) {
      state.virtual_time = clock_ - options_.quantum;
    } else if (state.last_pick + 1 != picks_) {
      state.virtual_time = std::max(state.virtual_time, clock_ - options_.quantum);
    }
    state.last_pick = picks_;
    least = std::min(least, state.virtual_time);
  }
  clock_ = std::max(clock_, least);
  size_t best = 0;
  auto key = [&](size_t index) {
    const Contender& contender = contenders[index];
    const SessionState& state = sessions_.at(contender.session_id);
    // The least virtual time is always within its lead, so something wins.
    return std::make_tuple(!WithinLead(state), contender.priority, state.virtual_time);
  };
  for (size_t i = 1; i < contenders.size(); ++i) {
    if (key(i) < key(best)) best = i;
  }
  others_least_ = std::chrono::nanoseconds::max();
  for (size_t i = 0; i < contenders.size(); ++i) {
    if (i != best) {
      others_least_ =
          std::min(others_least_, sessions_.at(contenders[i].session_id).virtual_time);
    }
  }
  return best;
}

bool FairQueue::ShouldYield(const Contender& running, std::chrono::nanoseconds turn_used,
                            std::span<const Contender> others) const {
  if (others.empty()) return false;
  if (turn_used >= options_.quantum) return true;
  for (const Contender& other : others) {
    if (other.priority >= running.priority) continue;
    auto it = sessions_.find(other.session_id);
    // A session never picked yet would start level with the clock.
    if (it == sessions_.end() || WithinLead(it->second)) return true;
  }
  return false;
}

void FairQueue::Charge(uint64_t session_id, uint32_t weight,
                       std::chrono::nanoseconds device_time, int commands) {
  SessionState& state = StateOf(session_id);
  state.used += device_time;
  state.virtual_time += device_time / std::max<uint32_t>(1, weight);
  if (commands <= 0) return;
  const std::chrono::nanoseconds per_command = device_time / commands;
  // An average over the last few charges, so that one odd command neither
  // makes nor breaks the estimate.
  state.typical_command = state.typical_command.count() == 0
                              ? per_command
                              : state.typical_command + (per_command - state.typical_command) / 8;
}

void FairQueue::Refund(uint64_t session_id, uint32_t weight,
                       std::chrono::nanoseconds device_time) {
  SessionState& state = StateOf(session_id);
  device_time = std::min(device_time, state.used);
  state.used -= device_time;
  state.virtual_time -= device_time / std::max<uint32_t>(1, weight);
}

std::chrono::nanoseconds FairQueue::AnticipationWindow(uint64_t session_id,
                                                       std::chrono::nanoseconds turn_used,
                                                       std::span<const Contender> others,
                                                       std::chrono::nanoseconds longest_wait) const {
  if (turn_used >= options_.quantum || !Owed(session_id)) return std::chrono::nanoseconds{0};
  std::chrono::nanoseconds longest_command{0};
  for (const Contender& other : others) {
    auto it = sessions_.find(other.session_id);
    if (it != sessions_.end()) longest_command = std::max(longest_command, it->second.typical_command);
  }
  return std::min(longest_wait, longest_command);
}

std::chrono::nanoseconds FairQueue::used(uint64_t session_id) const {
  auto it = sessions_.find(session_id);
  return it == sessions_.end() ? std::chrono::nanoseconds{0} : it->second.used;
}

std::chrono::nanoseconds FairQueue::virtual_time(uint64_t session_id) const {
  auto it = sessions_.find(session_id);
  return it == sessions_.end() ? clock_ : it->second.virtual_time;
}

}  // namespace neuron::rtd::queue

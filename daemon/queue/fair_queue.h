// Device-time fair queuing of the sessions that share one core: which
// session's turn comes next, and when a turn ends.
//
// Each session has a virtual time, the device time it has used divided by
// its weight. The session with ready work and the least virtual time runs
// next, for up to one quantum of device time back to back (an eager step is
// dozens of tiny commands: it must not wait for other tenants between them).
// A session that was idle comes back at most one quantum behind the others:
// sleeping banks no credit. A higher-priority stream may jump the order at
// any command boundary while its session is at most `priority_lead` ahead of
// the least virtual time: priority buys latency, not a larger share.
#ifndef NEURON_RTD_DAEMON_QUEUE_FAIR_QUEUE_H_
#define NEURON_RTD_DAEMON_QUEUE_FAIR_QUEUE_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <span>

namespace neuron::rtd::queue {

struct FairQueueOptions {
  // Device time a session runs back to back when others wait.
  std::chrono::nanoseconds quantum = std::chrono::milliseconds(2);
  // How far ahead of the least virtual time a session may run through
  // higher-priority streams.
  std::chrono::nanoseconds priority_lead = std::chrono::milliseconds(100);
  // A ready stream's priority rises by one level per this much waiting, so
  // that the lowest priority is never starved.
  std::chrono::nanoseconds priority_aging = std::chrono::milliseconds(20);
};

// Stream priorities, as CUDA's: lower runs first; 0 is the default and the
// lowest, -(levels - 1) the highest.
inline constexpr int kLowestStreamPriority = 0;

// The priority a stream that has waited `waited` runs at.
int AgedPriority(int priority, int highest, std::chrono::nanoseconds waited,
                 std::chrono::nanoseconds aging);

// A session with ready work at a command boundary.
struct Contender {
  uint64_t session_id = 0;
  uint32_t weight = 1;  // 0 is taken as 1
  // The best (lowest) aged priority among its ready streams.
  int priority = kLowestStreamPriority;
};

// Thread-safety: none; owned by one core's worker.
class FairQueue {
 public:
  explicit FairQueue(FairQueueOptions options) : options_(options) {}

  const FairQueueOptions& options() const { return options_; }

  // The index of the contender whose turn it is; `contenders` is not empty.
  // A contender that was not contending at the previous call comes back no
  // more than one quantum behind the least virtual time of the others.
  size_t Pick(std::span<const Contender> contenders);

  // Whether `running`, in its turn and with `turn_used` device time used,
  // gives the core to one of `others` (the other contenders) at this
  // command boundary: its quantum is used up, or another contender has a
  // higher-priority stream ready and is within its priority lead.
  bool ShouldYield(const Contender& running, std::chrono::nanoseconds turn_used,
                   std::span<const Contender> others) const;

  // Whether the session picked last has used no more than its share: its
  // virtual time is at most the least of the other contenders' at that
  // Pick. Only such a session is worth holding the core for (anticipation):
  // one that is ahead would only take more than its share.
  bool Owed(uint64_t session_id) const { return virtual_time(session_id) <= others_least_; }

  // Adds `device_time`, which `commands` commands took, to the session's
  // virtual time and to its typical command time.
  void Charge(uint64_t session_id, uint32_t weight, std::chrono::nanoseconds device_time,
              int commands = 1);

  // Takes back `device_time` charged to the session that it did not use
  // (the host preempted the simulated core's worker while it ran).
  void Refund(uint64_t session_id, uint32_t weight, std::chrono::nanoseconds device_time);

  // How long the core may wait for the next command of the session picked
  // last, whose ready work ran out after `turn_used` of its turn, before
  // `others` (ready contenders) get it; 0: hand over now. An eager client
  // sends its next operator a few microseconds after the last finished, and
  // a command that starts in between cannot be preempted, so waiting pays
  // when the others' commands are long. It never exceeds `longest_wait`,
  // nor the longest typical command among `others` (a moving average of
  // their commands' device time): beside tenants of tiny commands waiting
  // would only idle the core at this client's pace while their work piles
  // up. Only a session still owed service, with quantum left, is waited for.
  std::chrono::nanoseconds AnticipationWindow(uint64_t session_id,
                                              std::chrono::nanoseconds turn_used,
                                              std::span<const Contender> others,
                                              std::chrono::nanoseconds longest_wait) const;

  // The session left the core.
  void Forget(uint64_t session_id) { sessions_.erase(session_id); }

  // Device time the session has used on this core.
  std::chrono::nanoseconds used(uint64_t session_id) const;
  // The session's virtual time; tests and introspection.
  std::chrono::nanoseconds virtual_time(uint64_t session_id) const;

 private:
  struct SessionState {
    std::chrono::nanoseconds virtual_time{0};
    std::chrono::nanoseconds used{0};
    std::chrono::nanoseconds typical_command{0};
    uint64_t last_pick = 0;  // the Pick call that last saw it contend
  };

  SessionState& StateOf(uint64_t session_id);
  bool WithinLead(const SessionState& state) const;

  const FairQueueOptions options_;
  std::map<uint64_t, SessionState> sessions_;
  // The least virtual time among the contenders of the latest Pick; never
  // goes back.
  std::chrono::nanoseconds clock_{0};
  // The least virtual time among the latest Pick's contenders but the one
  // it picked; max() when it had none.
  std::chrono::nanoseconds others_least_ = std::chrono::nanoseconds::max();
  uint64_t picks_ = 0;
};

}  // namespace neuron::rtd::queue

#endif  // NEURON_RTD_DAEMON_QUEUE_FAIR_QUEUE_H_

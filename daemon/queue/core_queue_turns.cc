// The worker's choice of whose turn it is and the turn itself: sessions with
// ready work contend, the fair queue (fair_queue.h) picks one, and its ready
// commands run back to back, highest aged priority first, until the fair
// queue ends the turn.
#include <algorithm>
#include <chrono>
#include <optional>

#include "absl/cleanup/cleanup.h"

#include "daemon/queue/core_queue.h"

namespace neuron::rtd::queue {
namespace {

// How much device time a turn runs before it is reported to its session
// (`neuronctl ps` and `top` read the share over about 5 s).
constexpr std::chrono::milliseconds kDeviceTimeReportEvery(50);

}  // namespace

void CoreQueue::ForgetDeparted(const std::vector<SessionStreams>& sessions) {
  std::erase_if(known_sessions_, [&](uint64_t id) {
    const bool present = std::any_of(sessions.begin(), sessions.end(),
                                     [&](const SessionStreams& group) { return group.session_id == id; });
    if (!present) fair_.Forget(id);
    return !present;
  });
  for (const SessionStreams& group : sessions) {
    if (std::find(known_sessions_.begin(), known_sessions_.end(), group.session_id) ==
        known_sessions_.end()) {
      known_sessions_.push_back(group.session_id);
    }
  }
}

bool CoreQueue::Ready(const Stream& stream) {
  return !stream.in_flight.load(std::memory_order_acquire) &&
         !stream.waiting.load(std::memory_order_acquire) &&
         !stream.framing_lost.load(std::memory_order_acquire) &&
         stream.LoadTail() != stream.head();
}

size_t CoreQueue::BestStream(const SessionStreams& group, int64_t now,
                             const std::vector<bool>& passed) {
  const size_t count = group.streams.size();
  const size_t start = count == 0 ? 0 : *group.next_stream % count;
  size_t best = kNoStream;
  int best_priority = 0;
  for (size_t k = 0; k < count; ++k) {
    const size_t index = (start + k) % count;
    Stream& stream = *group.streams[index];
    if (passed[index] || !Ready(stream)) continue;
    if (stream.ready_since_ns == 0) stream.ready_since_ns = now;
    const int priority =
        AgedPriority(stream.priority(), highest_priority_,
                     std::chrono::nanoseconds(now - stream.ready_since_ns),
                     options_.fair.priority_aging);
    if (best == kNoStream || priority < best_priority) {
      best = index;
      best_priority = priority;
    }
  }
  return best;
}

std::optional<int> CoreQueue::ReadyPriority(const SessionStreams& group) {
  std::optional<int> best;
  for (const std::shared_ptr<Stream>& stream : group.streams) {
    if (!Ready(*stream)) continue;
    if (!best || stream->priority() < *best) best = stream->priority();
  }
  return best;
}

void CoreQueue::FindContenders(const std::vector<SessionStreams>& sessions, uint64_t running,
                               std::vector<Contender>& contenders,
                               std::vector<size_t>& groups) {
  contenders.clear();
  groups.clear();
  for (size_t i = 0; i < sessions.size(); ++i) {
    const SessionStreams& group = sessions[i];
    if (group.session_id == running || group.streams.empty()) continue;
    const std::optional<int> priority = ReadyPriority(group);
    if (!priority) continue;
    std::shared_ptr<ExecutionContext> context = group.streams.front()->context();
    if (context == nullptr) continue;
    contenders.push_back(Contender{.session_id = group.session_id,
                                   .weight = context->share_weight(),
                                   .priority = *priority});
    groups.push_back(i);
  }
}

bool CoreQueue::RetryWaits(const SessionStreams& group, std::vector<bool>& passed) {
  if (waiting_streams_.load(std::memory_order_acquire) == 0) return false;
  bool resumed = false;
  for (size_t i = 0; i < group.streams.size(); ++i) {
    const std::shared_ptr<Stream>& stream = group.streams[i];
    if (!stream->waiting.load(std::memory_order_acquire)) continue;
    Serve(stream, 1);
    if (!stream->waiting.load(std::memory_order_acquire)) {
      passed[i] = false;
      resumed = true;
    }
  }
  return resumed;
}

void CoreQueue::Tidy(const std::vector<SessionStreams>& sessions) {
  for (const SessionStreams& group : sessions) {
    passed_.assign(group.streams.size(), false);
    RetryWaits(group, passed_);
    for (const std::shared_ptr<Stream>& stream : group.streams) {
      if (stream->retiring.load(std::memory_order_acquire) &&
          !stream->in_flight.load(std::memory_order_acquire) &&
          (stream->LoadTail() == stream->head() || stream->failed() ||
           stream->framing_lost.load(std::memory_order_acquire))) {
        if (std::shared_ptr<ExecutionContext> context = stream->context()) {
          context->OnStreamRetired(stream->id(), RetiredTimeline{.completed = stream->completed(),
                                                                  .failed = stream->failed(),
                                                                  .failure = stream->failure()});
        }
        Detach(*stream);
      }
    }
  }
}

bool CoreQueue::Anticipate(const SessionStreams& group, const std::vector<bool>& passed,
                           std::chrono::nanoseconds window) {
  const int64_t until = Now() + window.count();
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  do {
    if (BestStream(group, Now(), passed) != kNoStream) return true;
    // A stream came or went (or the queue stops): pick again.
    if (generation_.load(std::memory_order_acquire) != generation) return false;
  } while (Now() < until);
  return false;
}

bool CoreQueue::SpinAlone(const std::vector<SessionStreams>& sessions,
                          const SessionStreams& group, const std::vector<bool>& passed,
                          uint64_t generation) {
  const auto until = std::chrono::steady_clock::now() + kIdleSpin;
  do {
    if (generation_.load(std::memory_order_acquire) != generation) return false;
    if (BestStream(group, Now(), passed) != kNoStream) return true;
    for (const SessionStreams& other : sessions) {
      if (other.session_id == group.session_id) continue;
      for (const std::shared_ptr<Stream>& stream : other.streams) {
        if (Ready(*stream)) return false;
      }
    }
  } while (std::chrono::steady_clock::now() < until);
  return false;
}

void CoreQueue::RunTurn(const std::vector<SessionStreams>& sessions, size_t group_index) {
  const SessionStreams& group = sessions[group_index];
  std::shared_ptr<ExecutionContext> context = group.streams.front()->context();
  if (context == nullptr) return;
  const uint32_t weight = context->share_weight();
  std::vector<bool>& passed = passed_;
  passed.assign(group.streams.size(), false);
  std::chrono::nanoseconds turn_used{0};
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  // A session picked for a higher-priority stream ahead of its fair turn
  // runs that stream's work, not the rest of its backlog.
  const int picked_priority = ReadyPriority(group).value_or(kLowestStreamPriority);
  // Whether another session has a stream that could outrank this one's:
  // only then is each command boundary worth a look at the others.
  int others_best = kLowestStreamPriority;
  for (const SessionStreams& other : sessions) {
    if (other.session_id == group.session_id) continue;
    for (const std::shared_ptr<Stream>& stream : other.streams) {
      others_best = std::min(others_best, stream->priority());
    }
  }
  const bool alone = sessions.size() == 1;  // with others, batches stop at the quantum
  // Device time is reported to the session at the end of the turn and every
  // kDeviceTimeReportEvery within it (a session alone keeps the core for as
  // long as it has work: its share must not read 0 meanwhile), without the
  // time the host took the worker away.
  int64_t cpu_reported_at = options_.thread_cpu_clock();
  std::chrono::nanoseconds turn_reported(0);
  auto report_device_time = [&] {
    const int64_t cpu_now = options_.thread_cpu_clock();
    const std::chrono::nanoseconds cpu_used(cpu_now - cpu_reported_at);
    std::chrono::nanoseconds used = turn_used - turn_reported;
    if (used > cpu_used) {
      fair_.Refund(group.session_id, weight, used - cpu_used);
      turn_used -= used - cpu_used;
      used = cpu_used;
    }
    context->AddDeviceTime(static_cast<uint64_t>(used.count()));
    turn_reported = turn_used;
    cpu_reported_at = cpu_now;
  };
  auto report = absl::MakeCleanup(report_device_time);
  while (true) {
    int64_t now = Now();
    size_t index = BestStream(group, now, passed);
    if (index == kNoStream && RetryWaits(group, passed)) continue;
    if (index == kNoStream) {
      // The session's work ran dry: wait a moment for its next command
      // before handing the core to another session.
      FindContenders(sessions, group.session_id, others_, other_groups_);
      if (others_.empty()) {
        // Alone: poll this session's rings for the idle spin without
        // picking again; the turn ends when another session has work or a
        // stream comes or goes.
        if (!SpinAlone(sessions, group, passed, generation)) return;
        continue;
      }
      const std::chrono::nanoseconds window = fair_.AnticipationWindow(
          group.session_id, turn_used, others_, options_.anticipation);
      if (window.count() <= 0 || !Anticipate(group, passed, window)) return;
      now = Now();
      index = BestStream(group, now, passed);
      if (index == kNoStream) return;
    }
    const std::shared_ptr<Stream>& stream = group.streams[index];
    // While no other stream could outrank this one (its session's only
    // stream, and no other session's stream of a better priority), take a
    // batch of records, up to what is left of the quantum when others may
    // be waiting.
    const bool batch = group.streams.size() == 1 && others_best >= stream->priority();
    const int served =
        Serve(stream, batch ? kRecordsPerBatch : 1,
              alone ? INT64_MAX : now + (options_.fair.quantum - turn_used).count());
    const int64_t finished = Now();
    const std::chrono::nanoseconds took(std::max<int64_t>(0, finished - now));
    fair_.Charge(group.session_id, weight, took, served);
    turn_used += took;
    if (turn_used - turn_reported >= kDeviceTimeReportEvery) report_device_time();
    stream->ready_since_ns = 0;
    *group.next_stream = index + 1;
    if (served == 0) passed[index] = true;
    // A stream came or went (a session may have been killed): pick again.
    if (generation_.load(std::memory_order_acquire) != generation) return;
    const bool quantum_used = turn_used >= options_.fair.quantum;
    const std::optional<int> priority = picked_priority < kLowestStreamPriority ||
                                                others_best < kLowestStreamPriority
                                            ? ReadyPriority(group)
                                            : std::nullopt;
    const int running_priority = priority.value_or(kLowestStreamPriority);
    const bool outranked_possible = others_best < running_priority;
    const bool priority_dropped = running_priority > picked_priority;
    if (!quantum_used && !outranked_possible && !priority_dropped) continue;
    FindContenders(sessions, group.session_id, others_, other_groups_);
    const Contender running{
        .session_id = group.session_id, .weight = weight, .priority = running_priority};
    if (fair_.ShouldYield(running, turn_used, others_)) return;
    if (!others_.empty() && priority_dropped && !fair_.Owed(group.session_id)) return;
  }
}

}  // namespace neuron::rtd::queue

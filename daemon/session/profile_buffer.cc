#include "daemon/session/profile_buffer.h"

#include <algorithm>
#include <utility>

namespace neuron::rtd::session {

void ProfileBuffer::Add(queue::ProfiledCommand command) {
  absl::MutexLock lock(&mutex_);
  if (commands_.size() >= capacity_) {
    ++dropped_;
    return;
  }
  commands_.push_back(std::move(command));
}

void ProfileBuffer::AddSpan(queue::RuntimeSpan span) {
  if (!runtime_spans()) return;
  absl::MutexLock lock(&mutex_);
  if (spans_.size() >= capacity_) {
    ++dropped_;
    return;
  }
  spans_.push_back(std::move(span));
}

ProfileBuffer::Drained ProfileBuffer::Drain(size_t max_records) {
  Drained drained;
  absl::MutexLock lock(&mutex_);
  const size_t commands = std::min(max_records, commands_.size());
  drained.commands.assign(std::make_move_iterator(commands_.begin()),
                          std::make_move_iterator(commands_.begin() + commands));
  commands_.erase(commands_.begin(), commands_.begin() + commands);
  const size_t spans = std::min(max_records, spans_.size());
  drained.spans.assign(std::make_move_iterator(spans_.begin()),
                       std::make_move_iterator(spans_.begin() + spans));
  spans_.erase(spans_.begin(), spans_.begin() + spans);
  drained.dropped = std::exchange(dropped_, 0);
  drained.more = !commands_.empty() || !spans_.empty();
  return drained;
}

}  // namespace neuron::rtd::session

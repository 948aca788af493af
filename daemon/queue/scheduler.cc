#include "daemon/queue/scheduler.h"

#include "absl/strings/str_format.h"

namespace neuron::rtd::queue {

Scheduler::Scheduler(hal::Backend& backend, CoreQueueOptions options)
    : backend_(backend),
      options_(std::move(options)),
      started_(new std::atomic<CoreQueue*>[backend.total_logical_cores()]),
      core_count_(backend.total_logical_cores()) {
  for (uint32_t core = 0; core < core_count_; ++core) started_[core].store(nullptr);
}

Scheduler::~Scheduler() {
  absl::MutexLock lock(&mutex_);
  for (auto& [core, queue] : queues_) queue->Stop();
  queues_.clear();
}

absl::StatusOr<hal::Device*> Scheduler::DeviceOfCore(uint32_t core) const {
  for (hal::Device* device : backend_.devices()) {
    const hal::DeviceInfo& info = device->info();
    if (core >= info.first_core_index && core - info.first_core_index < info.logical_cores()) {
      return device;
    }
  }
  return absl::NotFoundError(absl::StrFormat("this host has no logical core %d (it has %d)", core,
                                             backend_.total_logical_cores()));
}

absl::StatusOr<CoreQueue*> Scheduler::Queue(uint32_t core) {
  absl::StatusOr<hal::Device*> device = DeviceOfCore(core);
  if (!device.ok()) return device.status();
  absl::MutexLock lock(&mutex_);
  std::unique_ptr<CoreQueue>& queue = queues_[core];
  if (queue == nullptr) {
    absl::StatusOr<std::unique_ptr<CoreQueue>> created =
        CoreQueue::Create(core, **device, options_);
    if (!created.ok()) {
      queues_.erase(core);
      return created.status();
    }
    queue = *std::move(created);
    started_[core].store(queue.get(), std::memory_order_release);
  }
  return queue.get();
}

void Scheduler::WakeWaiting() {
  for (uint32_t core = 0; core < core_count_; ++core) {
    if (CoreQueue* queue = started_[core].load(std::memory_order_acquire)) queue->WakeIfWaiting();
  }
}

std::map<uint32_t, CoreQueue::Stats> Scheduler::Stats() const {
  std::map<uint32_t, CoreQueue::Stats> stats;
  for (uint32_t core = 0; core < backend_.total_logical_cores(); ++core) stats[core] = {};
  absl::MutexLock lock(&mutex_);
  for (const auto& [core, queue] : queues_) stats[core] = queue->stats();
  return stats;
}

}  // namespace neuron::rtd::queue

// CoreQueue's DMA engine: copies and large fills, in chunks that take turns.
#include "daemon/queue/core_queue.h"

#include <algorithm>
#include <chrono>

namespace neuron::rtd::queue {

absl::StatusOr<CoreQueue::DmaJob> CoreQueue::PrepareCopy(
    const std::shared_ptr<Stream>& stream, const std::shared_ptr<ExecutionContext>& context,
    DecodedRecord& record) {
  const auto copy = std::get<neuron_rtd_copy_payload>(record.command);
  DmaJob job{.stream = stream, .context = context, .record = record};
  auto resolve_host = [&](const neuron_rtd_location& location) -> absl::StatusOr<HostSpan> {
    if (location.kind == NEURON_RTD_LOCATION_STAGING) {
      return context->ResolveStaging(location.address, copy.bytes);
    }
    return context->ResolveHostMemory(location.memory_id, location.address, copy.bytes);
  };
  if (copy.dst.kind == NEURON_RTD_LOCATION_DEVICE && copy.src.kind == NEURON_RTD_LOCATION_DEVICE) {
    absl::StatusOr<DeviceSpan> source = context->ResolveDevice(copy.src.address, copy.bytes);
    if (!source.ok()) return source.status();
    absl::StatusOr<DeviceSpan> destination = context->ResolveDevice(copy.dst.address, copy.bytes);
    if (!destination.ok()) return destination.status();
    job.keep_alive = {source->segment, destination->segment};
    job.run = [source = *source, destination = *destination](uint64_t offset, uint64_t length) {
      return destination.device->CopyDeviceToDevice(destination.address + offset, *source.device,
                                                     source.address + offset, length);
    };
  } else if (copy.dst.kind == NEURON_RTD_LOCATION_DEVICE) {
    absl::StatusOr<HostSpan> source = resolve_host(copy.src);
    if (!source.ok()) return source.status();
    absl::StatusOr<DeviceSpan> destination = context->ResolveDevice(copy.dst.address, copy.bytes);
    if (!destination.ok()) return destination.status();
    job.keep_alive = {source->keep_alive, destination->segment};
    job.run = [source = *source, destination = *destination](uint64_t offset, uint64_t length) {
      return destination.device->CopyHostToDevice(destination.address + offset,
                                                  source.data + offset, length);
    };
  } else {
    absl::StatusOr<DeviceSpan> source = context->ResolveDevice(copy.src.address, copy.bytes);
    if (!source.ok()) return source.status();
    absl::StatusOr<HostSpan> destination = resolve_host(copy.dst);
    if (!destination.ok()) return destination.status();
    job.keep_alive = {source->segment, destination->keep_alive};
    job.run = [source = *source, destination = *destination](uint64_t offset, uint64_t length) {
      return source.device->CopyDeviceToHost(destination.data + offset, source.address + offset,
                                             length);
    };
  }
  job.bytes = copy.bytes;
  return job;
}

absl::Status CoreQueue::StartFill(const std::shared_ptr<Stream>& stream,
                                  const std::shared_ptr<ExecutionContext>& context,
                                  DecodedRecord& record) {
  const auto fill = std::get<neuron_rtd_fill_payload>(record.command);
  if (absl::Status valid = hal::CheckFill(fill.bytes, fill.pattern_bytes); !valid.ok()) {
    return valid;
  }
  absl::StatusOr<DeviceSpan> span = context->ResolveDevice(fill.device_address, fill.bytes);
  if (!span.ok()) return span.status();
  // Chunks start at multiples of kDmaChunkBytes, so of the pattern's width:
  // each chunk continues the pattern where the last one stopped.
  DmaJob job{.stream = stream, .context = context, .record = record};
  job.keep_alive = {span->segment};
  job.run = [span = *span, fill](uint64_t offset, uint64_t length) {
    return span.device->Fill(fill.device_address + offset, length, fill.pattern,
                             fill.pattern_bytes);
  };
  job.bytes = fill.bytes;
  EnqueueDma(std::move(job));
  return absl::OkStatus();
}

void CoreQueue::EnqueueDma(DmaJob job) {
  job.stream->Consume(job.record.header.length, job.record.header.sequence);
  job.stream->in_flight.store(true, std::memory_order_release);
  absl::MutexLock lock(&mutex_);
  dma_jobs_.push_back(std::move(job));
  dma_ready_.Signal();
}

std::deque<CoreQueue::DmaJob>::iterator CoreQueue::PickDmaJob() {
  // Each session's first job contends (jobs are few: one per stream at most).
  dma_contenders_.clear();
  std::vector<std::deque<DmaJob>::iterator> firsts;
  for (auto job = dma_jobs_.begin(); job != dma_jobs_.end(); ++job) {
    const uint64_t session = job->stream->session_id();
    if (std::any_of(dma_contenders_.begin(), dma_contenders_.end(),
                    [&](const Contender& seen) { return seen.session_id == session; })) {
      continue;
    }
    dma_contenders_.push_back(
        Contender{.session_id = session, .weight = job->context->share_weight()});
    firsts.push_back(job);
  }
  return firsts[dma_fair_.Pick(dma_contenders_)];
}

void CoreQueue::DmaLoop() {
  while (true) {
    DmaJob job;
    {
      absl::MutexLock lock(&mutex_);
      while (dma_jobs_.empty() && !stopping_) dma_ready_.Wait(&mutex_);
      if (stopping_) return;
      auto picked = PickDmaJob();
      job = std::move(*picked);
      dma_jobs_.erase(picked);
    }
    const uint64_t session = job.stream->session_id();
    absl::Status status;
    if (job.stream->failed()) {
      status = absl::AbortedError("stream failed");
    } else {
      const uint64_t length = std::min(kDmaChunkBytes, job.bytes - job.done);
      const int64_t started = Now();
      // The copy starts when its first chunk does, not when the worker
      // handed it over (the stream is in flight: this thread serves it).
      if (job.done == 0 && (job.record.header.flags & NEURON_RTD_RECORD_FLAG_PROFILE) != 0) {
        job.stream->profile_started_ns = started;
      }
      status = job.run(job.done, length);
      const int64_t took = std::max<int64_t>(0, Now() - started);
      dma_counters_.AddBusy(CoreEngine::kDma, static_cast<uint64_t>(took));
      job.took_ns += static_cast<uint64_t>(took);
      dma_fair_.Charge(session, job.context->share_weight(), std::chrono::nanoseconds(took));
      job.done += length;
      if (status.ok() && job.done < job.bytes) {
        // The rest after the session's other jobs: they take turns.
        absl::MutexLock lock(&mutex_);
        dma_jobs_.push_back(std::move(job));
        continue;
      }
    }
    {
      absl::MutexLock lock(&mutex_);
      if (std::none_of(dma_jobs_.begin(), dma_jobs_.end(), [&](const DmaJob& queued) {
            return queued.stream->session_id() == session;
          })) {
        dma_fair_.Forget(session);  // it comes back level, as an idle session does
      }
    }
    dma_counters_.RecordExecution(job.took_ns);
    Settle(dma_counters_, *job.stream, *job.context, job.record, status, nullptr);
    job.stream->in_flight.store(false, std::memory_order_release);
    Wake();
  }
}

}  // namespace neuron::rtd::queue

#include "daemon/compiler/compile_service.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "daemon/compiler/graph_json.h"
#include "neuron/rtd/content_hash.h"
#include "spdlog/spdlog.h"

namespace neuron::rtd::compiler {
namespace {

// What the worker does to a graph besides compiling it: part of every key,
// so that a change of either makes earlier packages miss.
constexpr char kCompilerFlags[] =
    "aoti-package destination-passing fallback-random bool-outputs-as-uint8 expanded-once v3";

}  // namespace

std::string HostCpuId() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(cpuinfo, line)) {
    if (model.empty() && line.starts_with("model name")) model = line;
    if (flags.empty() && line.starts_with("flags")) flags = line;
    if (!model.empty() && !flags.empty()) break;
  }
  return ContentHash(model + "\n" + flags);
}

absl::StatusOr<std::unique_ptr<CompileService>> CompileService::Create(
    CompileServiceOptions options, OsSysCalls& sys_calls) {
  absl::StatusOr<std::unique_ptr<ArtifactCache>> cache =
      ArtifactCache::Open(options.cache, sys_calls);
  if (!cache.ok()) return cache.status();
  return std::unique_ptr<CompileService>(
      new CompileService(std::move(options), *std::move(cache)));
}

CompileService::CompileService(CompileServiceOptions options,
                               std::unique_ptr<ArtifactCache> cache)
    : options_(std::move(options)), cache_(std::move(cache)), worker_(options_.worker) {
  thread_ = std::thread([this] { Loop(); });
}

CompileService::~CompileService() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  // The worker may be in the middle of a compile: it is killed, and the
  // thread sees the service stopping once its read fails.
  worker_.Interrupt();
  if (thread_.joinable()) thread_.join();
}

CompileKey CompileService::KeyOf(const hal::GraphPlan& graph) const {
  // A graph's name is a counter of the process that traced it (forward_0,
  // inference_3): the same graph traced again (Dynamo retracing it with
  // dynamic sizes) or by another process is the same code.
  hal::GraphPlan anonymous = graph;
  anonymous.name.clear();
  return CompileKey{.graph = ContentHash(GraphJson(anonymous)),
                    .torch_version = options_.torch_version,
                    .compiler_flags = kCompilerFlags,
                    .cpu = options_.cpu_id};
}

std::optional<hal::GraphCompiler::Package> CompileService::Cached(const hal::GraphPlan& graph) {
  std::optional<std::string> found = cache_->Find(KeyOf(graph).Digest());
  if (!found) return std::nullopt;
  absl::MutexLock lock(&mutex_);
  ++stats_.cache_hits;
  return Package{.path = *found};
}

void CompileService::Request(const hal::GraphPlan& graph, Ready ready) {
  Job job{.key = KeyOf(graph), .name = graph.name, .graph_json = GraphJson(graph),
          .ready = std::move(ready)};
  absl::MutexLock lock(&mutex_);
  if (stopping_) return;
  jobs_.push_back(std::move(job));
  ++stats_.queued;
}

CompileStats CompileService::stats() const {
  absl::MutexLock lock(&mutex_);
  CompileStats stats = stats_;
  stats.queued = jobs_.size();
  return stats;
}

absl::Status CompileService::CheckTorch(const WorkerInfo& worker) const {
  // "2.13.0+cpu" is a build of "2.13.0", which the daemon's headers name.
  const std::string worker_version = worker.torch_version.substr(0, worker.torch_version.find('+'));
  if (worker_version != options_.torch_version.substr(0, options_.torch_version.find('+'))) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s has torch %s", worker_.python(), worker.torch_version));
  }
  return absl::OkStatus();
}

void CompileService::FindWorker() {
  std::vector<std::string> tried;
  for (const std::string& python : options_.pythons) {
    {
      absl::MutexLock lock(&mutex_);
      if (stopping_) return;
    }
    worker_.set_python(python);
    absl::StatusOr<WorkerInfo> worker = worker_.Start();
    absl::Status usable = worker.ok() ? CheckTorch(*worker) : worker.status();
    if (usable.ok()) {
      spdlog::info("compiled graphs: the compiler worker runs {} (torch {})", python,
                   worker->torch_version);
      absl::MutexLock lock(&mutex_);
      stats_.ready = true;
      stats_.python = python;
      stats_.worker_torch_version = worker->torch_version;
      stats_.worker_starts = worker_.starts();
      return;
    }
    worker_.Stop();
    tried.emplace_back(usable.message());
  }
  absl::MutexLock lock(&mutex_);
  if (stopping_) return;
  stats_.worker_starts = worker_.starts();
  stats_.unavailable = absl::StrFormat(
      "no Python interpreter has this daemon's torch %s ([compiler] python names one): %s",
      options_.torch_version, absl::StrJoin(tried, "; "));
  spdlog::warn("compiled graphs are off: {}", stats_.unavailable);
}

absl::StatusOr<hal::GraphCompiler::Package> CompileService::Build(const Job& job) {
  if (std::optional<std::string> found = cache_->Find(job.key.Digest())) {
    absl::MutexLock lock(&mutex_);
    ++stats_.cache_hits;
    return Package{.path = *found};
  }
  // The worker found at start, started again if it died (a compile that
  // took too long, a crash).
  absl::StatusOr<WorkerInfo> worker = worker_.Start();
  if (!worker.ok()) return worker.status();
  if (absl::Status same_torch = CheckTorch(*worker); !same_torch.ok()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s, not this daemon's torch %s", same_torch.message(), options_.torch_version));
  }
  // The scratch directory may be on a file system other daemons share.
  const std::string output = absl::StrFormat("%s/pending-%d-%d.pt2", options_.worker.scratch_dir,
                                             ::getpid(), next_output_++);
  const auto started = std::chrono::steady_clock::now();
  if (absl::Status compiled = worker_.Compile(job.graph_json, output); !compiled.ok()) {
    return compiled;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  absl::StatusOr<std::string> stored = cache_->Store(job.key, output, job.name, seconds);
  if (!stored.ok()) return stored.status();
  absl::MutexLock lock(&mutex_);
  ++stats_.builds;
  stats_.build_seconds += seconds;
  spdlog::info("graph '{}' compiled in {:.1f} s", job.name, seconds);
  return Package{.path = *stored, .compile_seconds = seconds};
}

void CompileService::Loop() {
  FindWorker();
  while (true) {
    Job job;
    {
      absl::MutexLock lock(&mutex_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
        return stopping_ || !jobs_.empty();
      };
      mutex_.Await(absl::Condition(&ready));
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    std::string unavailable;
    {
      absl::MutexLock lock(&mutex_);
      unavailable = stats_.unavailable;
    }
    absl::StatusOr<Package> package =
        unavailable.empty() ? Build(job)
                            : absl::StatusOr<Package>(absl::UnavailableError(unavailable));
    if (!package.ok()) {
      absl::MutexLock lock(&mutex_);
      if (stopping_) return;
      ++stats_.failures;
      const absl::StatusCode code = package.status().code();
      // A worker that cannot start, or has another torch, will not get
      // better: later graphs are not tried. A graph that did not compile
      // is that graph's failure.
      if (unavailable.empty() && code == absl::StatusCode::kFailedPrecondition) {
        stats_.unavailable = std::string(package.status().message());
        spdlog::warn("compiled graphs are off: {}", stats_.unavailable);
      } else if (unavailable.empty()) {
        spdlog::warn("graph '{}' stays interpreted: {}", job.name,
                     std::string(package.status().message()));
      }
    }
    {
      absl::MutexLock lock(&mutex_);
      stats_.worker_starts = worker_.starts();
    }
    job.ready(std::move(package));
  }
}

}  // namespace neuron::rtd::compiler

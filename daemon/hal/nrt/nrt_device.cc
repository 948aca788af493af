#include "daemon/hal/nrt/nrt_device.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "daemon/hal/sim/arena_operand.h"
#include "daemon/hal/sim/engine_attribution.h"

namespace neuron::rtd::hal::nrt {
namespace {

// Copies between cores, and fills without nrt_tensor_memset, go through
// host buffers of at most this size.
constexpr uint64_t kBounceBytes = 4ull << 20;
// Launch signatures whose tensor sets a core keeps.
constexpr size_t kLaunchSignaturesPerCore = 256;

}  // namespace

absl::Status HostKernels::Available(std::string_view what) const {
  if (api != nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "%s runs on the host execution path, which this neuron-rtd does not have (it runs NEFFs "
      "only): %s",
      what, missing));
}

NrtDevice::NrtDevice(DeviceInfo info, DeviceRange hbm, std::shared_ptr<NrtRuntime> runtime,
                     std::vector<int32_t> vncs, std::unique_ptr<sim::HbmArena> mirror,
                     HostKernels host_kernels, std::shared_ptr<ModelCache> models,
                     std::string sysfs_dir, std::vector<uint32_t> physical_cores)
    : info_(std::move(info)),
      hbm_(hbm),
      runtime_(std::move(runtime)),
      vncs_(std::move(vncs)),
      mirror_(std::move(mirror)),
      host_kernels_(std::move(host_kernels)),
      models_(std::move(models)),
      sysfs_dir_(std::move(sysfs_dir)),
      physical_cores_(std::move(physical_cores)),
      core_locks_(new absl::Mutex[vncs_.size()]),
      host_launches_(new std::atomic<uint64_t>[vncs_.size()]()),
      runtime_bytes_used_(new std::atomic<int64_t>[vncs_.size()]) {
  for (size_t core = 0; core < vncs_.size(); ++core) {
    runtime_bytes_used_[core].store(-1, std::memory_order_relaxed);
    tensor_sets_.push_back(
        std::make_unique<LaunchTensorSets>(runtime_, kLaunchSignaturesPerCore));
  }
}

NrtDevice::~NrtDevice() {
  // Slices before the segments they slice.
  for (size_t core = 0; core < vncs_.size(); ++core) {
    absl::MutexLock lock(&core_locks_[core]);
    tensor_sets_[core]->Clear();
  }
  absl::MutexLock lock(&segments_mutex_);
  for (auto& [address, segment] : segments_) {
    runtime_->api().tensor_free(&segment.tensor);
    runtime_->RemoveSegmentTensor();
  }
}

size_t NrtDevice::CoreOf(int32_t vnc) const {
  const auto it = std::find(vncs_.begin(), vncs_.end(), vnc);
  return it == vncs_.end() ? 0 : static_cast<size_t>(it - vncs_.begin());
}

absl::StatusOr<NrtDevice::Located> NrtDevice::Locate(uint64_t address, uint64_t bytes) const {
  absl::ReaderMutexLock lock(&segments_mutex_);
  auto it = segments_.upper_bound(address);
  if (it != segments_.begin()) {
    --it;
    const uint64_t offset = address - it->first;
    if (offset < it->second.size && bytes <= it->second.size - offset) {
      return Located{.tensor = it->second.tensor, .offset = offset, .vnc = it->second.vnc};
    }
  }
  return absl::OutOfRangeError(absl::StrFormat(
      "device %d: [0x%x, +%d) is not inside one acquired segment", info_.index, address, bytes));
}

absl::Status NrtDevice::Acquire(DeviceRange range, uint32_t core) {
  if (core >= vncs_.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("device %d has %d cores; there is no core %d", info_.index,
                        vncs_.size(), core));
  }
  if (absl::Status committed = mirror_->Commit(range); !committed.ok()) return committed;
  const int32_t vnc = vncs_[core];
  const NrtApi& api = runtime_->api();
  nrt_tensor_t* tensor = nullptr;
  {
    absl::MutexLock lock(&core_locks_[core]);
    NRT_STATUS status = api.tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, range.size,
                                            "neuron-rtd segment", &tensor);
    absl::Status allocated = runtime_->library().ToStatus(
        status, absl::StrFormat("allocating %d bytes of HBM on device %d core %d", range.size,
                                info_.index, core));
    if (allocated.ok()) {
      // A new tensor holds whatever its memory held: another session's data.
      if (api.tensor_memset != nullptr) {
        status = api.tensor_memset(tensor, 0, 0, range.size);
      } else {
        const std::vector<char> zeros(std::min(range.size, kBounceBytes), 0);
        for (uint64_t done = 0; done < range.size && status == NRT_SUCCESS;
             done += zeros.size()) {
          status = api.tensor_write(tensor, zeros.data(), done,
                                    std::min<uint64_t>(zeros.size(), range.size - done));
        }
      }
      allocated = runtime_->library().ToStatus(status, "clearing a new segment");
      if (!allocated.ok()) api.tensor_free(&tensor);
    }
    if (!allocated.ok()) {
      mirror_->Decommit(range).IgnoreError();
      return allocated;
    }
  }
  runtime_->AddSegmentTensor();
  absl::MutexLock lock(&segments_mutex_);
  segments_[range.address] = Segment{.tensor = tensor, .size = range.size, .vnc = vnc};
  return absl::OkStatus();
}

absl::Status NrtDevice::Release(DeviceRange range) {
  Segment segment;
  {
    absl::MutexLock lock(&segments_mutex_);
    auto it = segments_.find(range.address);
    if (it == segments_.end() || it->second.size != range.size) {
      return absl::InternalError(absl::StrFormat(
          "device %d: releasing [0x%x, +%d), which was not acquired", info_.index,
          range.address, range.size));
    }
    segment = it->second;
    segments_.erase(it);
  }
  {
    const size_t core = CoreOf(segment.vnc);
    absl::MutexLock lock(&core_locks_[core]);
    tensor_sets_[core]->ForgetSegment(segment.tensor);
    runtime_->api().tensor_free(&segment.tensor);
  }
  runtime_->RemoveSegmentTensor();
  return mirror_->Decommit(range);
}

absl::Status NrtDevice::CopyHostToDevice(uint64_t device_address, const void* host,
                                         uint64_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  absl::StatusOr<Located> at = Locate(device_address, bytes);
  if (!at.ok()) return at.status();
  absl::MutexLock lock(&CoreLock(at->vnc));
  return runtime_->library().ToStatus(
      runtime_->api().tensor_write(at->tensor, host, at->offset, bytes), "nrt_tensor_write");
}

absl::Status NrtDevice::CopyDeviceToHost(void* host, uint64_t device_address, uint64_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  absl::StatusOr<Located> at = Locate(device_address, bytes);
  if (!at.ok()) return at.status();
  absl::MutexLock lock(&CoreLock(at->vnc));
  return runtime_->library().ToStatus(
      runtime_->api().tensor_read(at->tensor, host, at->offset, bytes), "nrt_tensor_read");
}

absl::Status NrtDevice::CopyDeviceToDevice(uint64_t device_address, Device& source,
                                           uint64_t source_address, uint64_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  auto* from_device = dynamic_cast<NrtDevice*>(&source);
  if (from_device == nullptr) {
    return absl::InvalidArgumentError("device-to-device copy between different backends");
  }
  absl::StatusOr<Located> to = Locate(device_address, bytes);
  if (!to.ok()) return to.status();
  absl::StatusOr<Located> from = from_device->Locate(source_address, bytes);
  if (!from.ok()) return from.status();
  if (from_device == this && from->vnc == to->vnc) {
    absl::MutexLock lock(&CoreLock(to->vnc));
    return runtime_->library().ToStatus(
        runtime_->api().tensor_copy(from->tensor, from->offset, to->tensor, to->offset, bytes),
        "nrt_tensor_copy");
  }
  // libnrt copies device to device only within one core's HBM. Chunks in
  // address order, so that overlapping ranges of one tensor (impossible
  // across cores) cannot arise here.
  std::vector<char> bounce(std::min(bytes, kBounceBytes));
  for (uint64_t done = 0; done < bytes; done += bounce.size()) {
    const uint64_t chunk = std::min<uint64_t>(bounce.size(), bytes - done);
    {
      absl::MutexLock lock(&from_device->CoreLock(from->vnc));
      if (absl::Status read = runtime_->library().ToStatus(
              runtime_->api().tensor_read(from->tensor, bounce.data(), from->offset + done,
                                          chunk),
              "nrt_tensor_read");
          !read.ok()) {
        return read;
      }
    }
    absl::MutexLock lock(&CoreLock(to->vnc));
    if (absl::Status written = runtime_->library().ToStatus(
            runtime_->api().tensor_write(to->tensor, bounce.data(), to->offset + done, chunk),
            "nrt_tensor_write");
        !written.ok()) {
      return written;
    }
  }
  return absl::OkStatus();
}

absl::Status NrtDevice::Fill(uint64_t device_address, uint64_t bytes, uint64_t pattern,
                             uint32_t pattern_bytes) {
  if (absl::Status valid = CheckFill(bytes, pattern_bytes); !valid.ok()) return valid;
  if (bytes == 0) return absl::OkStatus();
  absl::StatusOr<Located> at = Locate(device_address, bytes);
  if (!at.ok()) return at.status();
  const NrtApi& api = runtime_->api();
  absl::MutexLock lock(&CoreLock(at->vnc));
  if (pattern_bytes == 1 && api.tensor_memset != nullptr) {
    return runtime_->library().ToStatus(
        api.tensor_memset(at->tensor, at->offset, static_cast<int>(pattern & 0xff), bytes),
        "nrt_tensor_memset");
  }
  const uint64_t chunk_bytes = std::min(bytes, kBounceBytes / pattern_bytes * pattern_bytes);
  std::vector<char> chunk(chunk_bytes);
  for (uint64_t offset = 0; offset < chunk_bytes; offset += pattern_bytes) {
    std::memcpy(chunk.data() + offset, &pattern, pattern_bytes);
  }
  for (uint64_t done = 0; done < bytes; done += chunk_bytes) {
    const uint64_t length = std::min(chunk_bytes, bytes - done);
    if (absl::Status written = runtime_->library().ToStatus(
            api.tensor_write(at->tensor, chunk.data(), at->offset + done, length),
            "nrt_tensor_write");
        !written.ok()) {
      return written;
    }
  }
  return absl::OkStatus();
}

absl::Status NrtDevice::ReadToMirror(uint64_t address, uint64_t bytes) {
  absl::StatusOr<void*> host = mirror_->HostPointer(address, bytes);
  if (!host.ok()) return host.status();
  return CopyDeviceToHost(*host, address, bytes);
}

absl::Status NrtDevice::WriteFromMirror(uint64_t address, uint64_t bytes) {
  absl::StatusOr<void*> host = mirror_->HostPointer(address, bytes);
  if (!host.ok()) return host.status();
  return CopyHostToDevice(address, *host, bytes);
}

absl::Status NrtDevice::Reduce(const Reduction& reduction, uint64_t destination,
                               std::span<const ReduceOperand> sources) {
  if (absl::Status available = host_kernels_.Available("a collective's reduction");
      !available.ok()) {
    return available;
  }
  const uint64_t bytes = reduction.count * ElementBytes(reduction.type);
  std::vector<NrtDevice*> devices{this};
  std::vector<sim::ArenaOperand> operands;
  for (const ReduceOperand& source : sources) {
    auto* device = dynamic_cast<NrtDevice*>(source.device);
    if (device == nullptr) {
      return absl::InvalidArgumentError("a reduction between devices of different backends");
    }
    devices.push_back(device);
    operands.push_back(sim::ArenaOperand{.arena = device->mirror_.get(), .address = source.address});
  }
  // Each chip's mirror once, in index order: two reductions never wait on
  // each other's locks.
  std::sort(devices.begin(), devices.end(),
            [](NrtDevice* a, NrtDevice* b) { return a->info_.index < b->info_.index; });
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  std::vector<std::unique_ptr<absl::MutexLock>> locks;
  for (NrtDevice* device : devices) {
    locks.push_back(std::make_unique<absl::MutexLock>(&device->host_mutex_));
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    auto* device = static_cast<NrtDevice*>(sources[i].device);
    if (absl::Status read = device->ReadToMirror(sources[i].address, bytes); !read.ok()) {
      return read;
    }
  }
  if (absl::Status read = ReadToMirror(destination, bytes); !read.ok()) return read;
  host_launches_[0].fetch_add(1, std::memory_order_relaxed);
  if (absl::Status reduced =
          host_kernels_.api->reduce_in_arenas(reduction, *mirror_, destination, operands);
      !reduced.ok()) {
    return reduced;
  }
  return WriteFromMirror(destination, bytes);
}

absl::Status NrtDevice::RunAddF32(std::span<const uint64_t> arguments,
                                  std::span<const uint8_t> scalars) {
  if (absl::Status available = host_kernels_.Available("a built-in executable");
      !available.ok()) {
    return available;
  }
  absl::StatusOr<uint64_t> count = BuiltinAddF32Count(arguments, scalars);
  if (!count.ok()) return count.status();
  absl::MutexLock lock(&host_mutex_);
  for (uint64_t address : arguments) {
    if (absl::Status read = ReadToMirror(address, *count * sizeof(float)); !read.ok()) {
      return read;
    }
  }
  host_launches_[0].fetch_add(1, std::memory_order_relaxed);
  if (absl::Status ran = host_kernels_.api->run_add_f32(*mirror_, arguments, scalars);
      !ran.ok()) {
    return ran;
  }
  return WriteFromMirror(arguments[2], *count * sizeof(float));
}

absl::Status NrtDevice::RunOnHost(const HostExecutable& executable, uint32_t core,
                                  std::span<const uint64_t> bindings,
                                  std::span<const uint8_t> immediates) {
  absl::MutexLock lock(&host_mutex_);
  for (const TensorLayout& layout : executable.bound_tensors()) {
    const uint64_t extent = TensorExtentBytes(layout);
    if (extent == 0) continue;
    if (absl::Status read = ReadToMirror(bindings[layout.address_index], extent); !read.ok()) {
      return read;
    }
  }
  host_launches_[core].fetch_add(1, std::memory_order_relaxed);
  absl::Status ran = executable.executable().Run(*mirror_, bindings, immediates,
                                                      host_kernels_.launch);
  // An operator error leaves device memory as it was: nothing is written back.
  if (!ran.ok()) return ran;
  // Every tensor goes back, inputs too: kernels write more than their
  // schemas admit (native_batch_norm's running statistics are `Tensor?`).
  for (const TensorLayout& layout : executable.bound_tensors()) {
    const uint64_t extent = TensorExtentBytes(layout);
    if (extent == 0) continue;
    if (absl::Status written = WriteFromMirror(bindings[layout.address_index], extent);
        !written.ok()) {
      return written;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<NeffTensor>> NrtDevice::InspectNeff(uint64_t key,
                                                               std::string_view bytes) {
  absl::MutexLock lock(&core_locks_[0]);
  absl::StatusOr<nrt_model_t*> model = models_->Get(key, bytes, vncs_[0]);
  if (!model.ok()) return model.status();
  return ModelTensors(*runtime_, *model);
}

std::string NrtDevice::CoreFault(uint32_t core) const {
  return core < vncs_.size() ? runtime_->Fault(vncs_[core]) : std::string();
}

bool NrtDevice::HasFailedCore() const {
  for (int32_t vnc : vncs_) {
    if (!runtime_->Fault(vnc).empty()) return true;
  }
  return false;
}

uint64_t NrtDevice::HostExecutedLaunches(uint32_t core) const {
  return core < vncs_.size() ? host_launches_[core].load(std::memory_order_relaxed) : 0;
}

absl::Status NrtDevice::Reset() {
  if (!HasFailedCore()) {
    for (size_t core = 0; core < vncs_.size(); ++core) {
      absl::MutexLock lock(&core_locks_[core]);
      tensor_sets_[core]->Clear();
      models_->ForgetCore(vncs_[core]);
    }
    return absl::OkStatus();
  }
  absl::Status restarted =
      runtime_->Restart(absl::Seconds(30), [this] { models_->UnloadAll(); });
  if (!restarted.ok()) {
    for (int32_t vnc : vncs_) runtime_->SetFault(vnc, std::string(restarted.message()));
  }
  return restarted;
}

absl::StatusOr<NrtDevice::Bound> NrtDevice::Bind(const NeffTensor& tensor, uint64_t address,
                                                 int32_t vnc) {
  absl::StatusOr<Located> at = Locate(address, tensor.size_bytes);
  if (!at.ok()) return at.status();
  const NrtApi& api = runtime_->api();
  Bound bound{.source = *at};
  if (at->vnc == vnc) {
    if (absl::Status sliced = runtime_->library().ToStatus(
            api.tensor_allocate_slice(at->tensor, at->offset, tensor.size_bytes,
                                      tensor.name.c_str(), &bound.tensor),
            "nrt_tensor_allocate_slice");
        !sliced.ok()) {
      return sliced;
    }
    return bound;
  }
  // libnrt executes on tensors of the model's own core: a segment of another
  // core goes through a staging tensor.
  bound.staged = true;
  if (absl::Status allocated = runtime_->library().ToStatus(
          api.tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, tensor.size_bytes,
                              tensor.name.c_str(), &bound.tensor),
          absl::StrFormat("staging tensor %s on core %d", tensor.name, vnc));
      !allocated.ok()) {
    return allocated;
  }
  if (tensor.input) {
    std::vector<char> bounce(tensor.size_bytes);
    absl::Status copied = runtime_->library().ToStatus(
        api.tensor_read(at->tensor, bounce.data(), at->offset, bounce.size()), "nrt_tensor_read");
    if (copied.ok()) {
      copied = runtime_->library().ToStatus(
          api.tensor_write(bound.tensor, bounce.data(), 0, bounce.size()), "nrt_tensor_write");
    }
    if (!copied.ok()) {
      api.tensor_free(&bound.tensor);
      return copied;
    }
  }
  return bound;
}

absl::Status NrtDevice::Execute(const LoadedNeff& neff, uint32_t core, nrt_model_t* model,
                                const LaunchTensorSets::Sets& sets) {
  const NRT_STATUS executed = runtime_->api().execute(model, sets.inputs, sets.outputs);
  neff.CountLaunch();
  absl::Status status = runtime_->library().ToStatus(
      executed,
      absl::StrFormat("NEFF '%s' on device %d core %d", neff.plan().name, info_.index, core));
  if (IsCoreFatal(executed)) runtime_->SetFault(vncs_[core], std::string(status.message()));
  return status;
}

absl::Status NrtDevice::RunNeff(const LoadedNeff& neff, uint32_t core,
                                std::span<const uint64_t> bindings) {
  const int32_t vnc = vncs_[core];
  const NrtApi& api = runtime_->api();
  const std::vector<NeffTensor>& tensors = neff.tensors();
  absl::MutexLock lock(&core_locks_[core]);
  absl::StatusOr<nrt_model_t*> model = models_->Get(neff.key(), neff.plan().bytes, vnc);
  if (!model.ok()) return model.status();
  LaunchTensorSets& kept = *tensor_sets_[core];
  if (const LaunchTensorSets::Sets* sets = kept.Find(neff.key(), bindings)) {
    return Execute(neff, core, *model, *sets);
  }
  LaunchTensorSets::Sets sets;
  std::vector<Bound> bound;
  absl::Status status = runtime_->library().ToStatus(api.allocate_tensor_set(&sets.inputs),
                                                      "nrt_allocate_tensor_set");
  if (status.ok()) {
    status = runtime_->library().ToStatus(api.allocate_tensor_set(&sets.outputs),
                                          "nrt_allocate_tensor_set");
  }
  for (size_t i = 0; i < tensors.size() && status.ok(); ++i) {
    absl::StatusOr<Bound> each = Bind(tensors[i], bindings[i], vnc);
    if (!each.ok()) {
      status = each.status();
      break;
    }
    bound.push_back(*each);
    status = runtime_->library().ToStatus(
        api.add_tensor_to_tensor_set(tensors[i].input ? sets.inputs : sets.outputs,
                                     tensors[i].name.c_str(), each->tensor),
        "nrt_add_tensor_to_tensor_set");
  }
  if (status.ok()) status = Execute(neff, core, *model, sets);
  bool staged = false;
  for (size_t i = 0; i < bound.size(); ++i) {
    if (!bound[i].staged) continue;
    staged = true;
    if (status.ok() && !tensors[i].input) {
      std::vector<char> bounce(tensors[i].size_bytes);
      status = runtime_->library().ToStatus(
          api.tensor_read(bound[i].tensor, bounce.data(), 0, bounce.size()), "nrt_tensor_read");
      if (status.ok()) {
        status = runtime_->library().ToStatus(
            api.tensor_write(bound[i].source.tensor, bounce.data(), bound[i].source.offset,
                             bounce.size()),
            "nrt_tensor_write");
      }
    }
  }
  if (status.ok() && !staged) {
    std::vector<nrt_tensor_t*> slices;
    std::vector<const nrt_tensor_t*> segments;
    for (const Bound& each : bound) {
      slices.push_back(each.tensor);
      segments.push_back(each.source.tensor);
    }
    kept.Insert(neff.key(), bindings, sets, std::move(slices), std::move(segments));
    return status;
  }
  for (Bound& each : bound) api.tensor_free(&each.tensor);
  if (sets.inputs != nullptr) api.destroy_tensor_set(&sets.inputs);
  if (sets.outputs != nullptr) api.destroy_tensor_set(&sets.outputs);
  return status;
}

absl::Status NrtDevice::Dispatch(const Executable& executable, uint32_t core,
                                 std::span<const uint64_t> bindings,
                                 std::span<const uint8_t> immediates) {
  if (core >= vncs_.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("device %d has no core %d", info_.index, core));
  }
  if (std::string fault = CoreFault(core); !fault.empty()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "core %d of device %d has failed (%s); `neuronctl reset %d` recovers it", core,
        info_.index, fault, info_.index));
  }
  if (const auto* host = dynamic_cast<const HostExecutable*>(&executable)) {
    return RunOnHost(*host, core, bindings, immediates);
  }
  if (const auto* neff = dynamic_cast<const LoadedNeff*>(&executable)) {
    return RunNeff(*neff, core, bindings);
  }
  return absl::InvalidArgumentError("the executable was not prepared by the nrt backend");
}

Engine NrtDevice::EngineOf(CommandKind kind, std::string_view op_name,
                          const Executable* launched) const {
  if (kind == CommandKind::kLaunch) {
    return dynamic_cast<const LoadedNeff*>(launched) != nullptr ? Engine::kUnspecified
                                                               : Engine::kHost;
  }
  return sim::SimEngineOf(kind, op_name);
}

}  // namespace neuron::rtd::hal::nrt

#include "daemon/hal/nrt/neff_models.h"

#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/numbers.h"

namespace neuron::rtd::hal::nrt {
namespace {

// c10::ScalarType numbers.
constexpr int32_t kUInt8 = 0, kInt8 = 1, kInt16 = 2, kInt32 = 3, kInt64 = 4, kHalf = 5,
                  kFloat = 6, kBFloat16 = 15, kFloat8E5M2 = 23, kFloat8E4M3 = 24, kUInt16 = 27,
                  kUInt32 = 28, kUInt64 = 29;

// The hardware codes of the 2026 nrt.h.
int32_t FromHardwareCode(nrt_dtype_t code) {
  switch (code) {
    case 0x1: return kUInt64;
    case 0x2: return kInt8;
    case 0x3: return kUInt8;
    case 0x4: return kInt16;
    case 0x5: return kUInt16;
    case 0x6: return kBFloat16;
    case 0x7: return kHalf;
    case 0x8: return kInt32;
    case 0x9: return kUInt32;
    case 0xA: return kFloat;
    case 0xC: return kInt64;
    case 0xE: return kFloat8E4M3;
    case 0xF: return kFloat8E5M2;
    default: return -1;
  }
}

// The sequential codes of earlier nrt_experimental.h.
int32_t FromSequentialCode(nrt_dtype_t code) {
  switch (code) {
    case 1: return kFloat;
    case 2: return kHalf;
    case 3: return kBFloat16;
    case 4: return kInt8;
    case 5: return kUInt8;
    case 6: return kInt16;
    case 7: return kUInt16;
    case 8: return kInt32;
    case 9: return kUInt32;
    case 10: return kInt64;
    case 11: return kUInt64;
    default: return -1;
  }
}

uint64_t ElementBytesOf(int32_t dtype) {
  switch (dtype) {
    case kUInt8: case kInt8: case kFloat8E5M2: case kFloat8E4M3: return 1;
    case kInt16: case kUInt16: case kHalf: case kBFloat16: return 2;
    case kInt32: case kUInt32: case kFloat: return 4;
    case kInt64: case kUInt64: return 8;
    default: return 0;
  }
}

// Whether the runtime numbers types by hardware code (libnrt 2.30 and
// later, by the headers of 2026).
bool UsesHardwareCodes(const NrtLibrary& library) {
  std::vector<std::string> parts = absl::StrSplit(library.version(), '.');
  uint64_t major = 0, minor = 0;
  if (parts.size() < 2 || !absl::SimpleAtoi(parts[0], &major) ||
      !absl::SimpleAtoi(parts[1], &minor)) {
    return true;
  }
  return major > 2 || (major == 2 && minor >= 30);
}

}  // namespace

ModelCache::~ModelCache() {
  absl::MutexLock lock(&mutex_);
  for (auto& [key, entry] : models_) runtime_->api().unload(entry.model);
}

absl::StatusOr<nrt_model_t*> ModelCache::Get(uint64_t neff, std::string_view bytes,
                                             int32_t vnc) {
  absl::MutexLock lock(&mutex_);
  if (auto it = models_.find({neff, vnc}); it != models_.end()) {
    it->second.last_use = ++uses_;
    return it->second.model;
  }
  while (true) {
    nrt_model_t* model = nullptr;
    const NRT_STATUS status = runtime_->api().load(bytes.data(), bytes.size(), vnc, -1, &model);
    if (status == NRT_SUCCESS) {
      models_[{neff, vnc}] = Entry{.model = model, .last_use = ++uses_};
      return model;
    }
    auto victim = models_.end();
    for (auto it = models_.begin(); it != models_.end(); ++it) {
      if (it->first.second == vnc &&
          (victim == models_.end() || it->second.last_use < victim->second.last_use)) {
        victim = it;
      }
    }
    if (status != NRT_RESOURCE || victim == models_.end()) {
      return runtime_->library().ToStatus(status,
                                          absl::StrFormat("nrt_load on core %d", vnc));
    }
    runtime_->api().unload(victim->second.model);
    models_.erase(victim);
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
}

void ModelCache::Forget(uint64_t neff) {
  absl::MutexLock lock(&mutex_);
  for (auto it = models_.begin(); it != models_.end();) {
    if (it->first.first == neff) {
      runtime_->api().unload(it->second.model);
      it = models_.erase(it);
    } else {
      ++it;
    }
  }
}

void ModelCache::ForgetCore(int32_t vnc) {
  absl::MutexLock lock(&mutex_);
  for (auto it = models_.begin(); it != models_.end();) {
    if (it->first.second == vnc) {
      runtime_->api().unload(it->second.model);
      it = models_.erase(it);
    } else {
      ++it;
    }
  }
}

void ModelCache::UnloadAll() {
  absl::MutexLock lock(&mutex_);
  for (auto& [key, entry] : models_) runtime_->api().unload(entry.model);
  models_.clear();
}

uint64_t ModelCache::loaded() const {
  absl::MutexLock lock(&mutex_);
  return models_.size();
}

absl::StatusOr<std::vector<NeffTensor>> ModelTensors(const NrtRuntime& runtime,
                                                     nrt_model_t* model) {
  nrt_tensor_info_array_t* info = nullptr;
  if (absl::Status status = runtime.library().ToStatus(
          runtime.api().get_model_tensor_info(model, &info), "nrt_get_model_tensor_info");
      !status.ok()) {
    return status;
  }
  const bool hardware_codes = UsesHardwareCodes(runtime.library());
  std::vector<NeffTensor> tensors;
  std::set<std::string> names;
  absl::Status problem;
  for (uint64_t i = 0; i < info->tensor_count && problem.ok(); ++i) {
    const nrt_tensor_info_t& entry = info->tensor_array[i];
    NeffTensor tensor;
    tensor.name.assign(entry.name, strnlen(entry.name, sizeof(entry.name)));
    tensor.input = entry.usage == NRT_TENSOR_USAGE_INPUT;
    tensor.size_bytes = entry.size;
    uint64_t elements = 1;
    for (uint32_t d = 0; d < entry.ndim && entry.shape != nullptr; ++d) {
      tensor.shape.push_back(entry.shape[d]);
      elements *= entry.shape[d];
    }
    // The numbering the runtime's version implies, unless the size says
    // otherwise.
    const int32_t first = hardware_codes ? FromHardwareCode(entry.dtype)
                                         : FromSequentialCode(entry.dtype);
    const int32_t second = hardware_codes ? FromSequentialCode(entry.dtype)
                                          : FromHardwareCode(entry.dtype);
    tensor.dtype = ElementBytesOf(first) * elements == entry.size    ? first
                   : ElementBytesOf(second) * elements == entry.size ? second
                                                                     : -1;
    if (!names.insert(tensor.name).second) {
      problem = absl::InvalidArgumentError(
          absl::StrFormat("the NEFF names two tensors \"%s\"", tensor.name));
    }
    tensors.push_back(std::move(tensor));
  }
  runtime.api().free_model_tensor_info(info);
  if (!problem.ok()) return problem;
  return tensors;
}

}  // namespace neuron::rtd::hal::nrt

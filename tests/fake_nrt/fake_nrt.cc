// The fake libnrt.so.1: the C API of daemon/hal/nrt/nrt_api.h over host
// memory, behaving as AWS's documentation says the real one does (relative
// core numbering, one process per core, per-core HBM budgets, the status
// codes of misuse), so that neuron-rtd's nrt backend can be tested without
// Trainium. See fake_runtime.h for the environment it reads.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "daemon/hal/nrt/nrt_api.h"
#include "tests/fake_nrt/fake_runtime.h"

using neuron::rtd::fake_nrt::FakeRuntime;
using neuron::rtd::fake_nrt::FakeTensorSpec;
using neuron::rtd::fake_nrt::TensorSet;

namespace {

// Every entry point holds the runtime's lock and may be failed on purpose.
#define FAKE_NRT_ENTER(symbol)                                      \
  FakeRuntime& runtime = FakeRuntime::Get();                       \
  std::unique_lock<std::mutex> lock(runtime.mutex);                \
  if (NRT_STATUS injected = runtime.Fault(symbol); injected != NRT_SUCCESS) return injected

#define FAKE_NRT_REQUIRE_UP()                                               \
  if (NRT_STATUS up = runtime.CheckUp(); up != NRT_SUCCESS) return up

bool InRange(const nrt_tensor_t* tensor, size_t offset, size_t size) {
  return offset <= tensor->size && size <= tensor->size - offset;
}

unsigned char* Data(const nrt_tensor_t* tensor) {
  return tensor->storage->bytes.data() + tensor->offset;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) NRT_STATUS nrt_init(nrt_framework_type_t, const char*,
                                                          const char*) {
  FAKE_NRT_ENTER("nrt_init");
  return runtime.Init();
}

__attribute__((visibility("default"))) void nrt_close(void) {
  FakeRuntime& runtime = FakeRuntime::Get();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  runtime.Close();
}

__attribute__((visibility("default"))) NRT_STATUS nrt_get_total_nc_count(uint32_t* count) {
  FAKE_NRT_ENTER("nrt_get_total_nc_count");
  if (count == nullptr) return NRT_INVALID;
  *count = runtime.total_cores();
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_get_visible_nc_count(uint32_t* count) {
  FAKE_NRT_ENTER("nrt_get_visible_nc_count");
  FAKE_NRT_REQUIRE_UP();
  if (count == nullptr) return NRT_INVALID;
  *count = runtime.visible_cores();
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_get_version(nrt_version_t* version,
                                                                 size_t size) {
  FAKE_NRT_ENTER("nrt_get_version");
  if (version == nullptr || size < sizeof(nrt_version_t)) return NRT_INVALID;
  std::memset(version, 0, sizeof(*version));
  std::vector<std::string> parts = absl::StrSplit(runtime.version(), '.');
  uint64_t* fields[] = {&version->rt_major, &version->rt_minor, &version->rt_patch,
                        &version->rt_maintenance};
  for (size_t i = 0; i < parts.size() && i < 4; ++i) {
    if (!absl::SimpleAtoi(parts[i], fields[i])) return NRT_FAILURE;
  }
  std::snprintf(version->rt_detail, sizeof(version->rt_detail), "fake libnrt (neuron-rtd tests)");
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_get_instance_info(nrt_instance_info_t* info,
                                                                       size_t size) {
  FAKE_NRT_ENTER("nrt_get_instance_info");
  if (info == nullptr || size < sizeof(nrt_instance_info_t)) return NRT_INVALID;
  std::memset(info, 0, sizeof(*info));
  info->family = NRT_INSTANCE_FAMILY_TRN2;
  std::snprintf(info->arch_name, sizeof(info->arch_name), "trn2");
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_get_vnc_memory_stats(
    uint32_t vnc, nrt_vnc_memory_stats_t* stats, size_t size, size_t* written) {
  FAKE_NRT_ENTER("nrt_get_vnc_memory_stats");
  FAKE_NRT_REQUIRE_UP();
  const int core = runtime.Absolute(static_cast<int>(vnc));
  if (core < 0 || stats == nullptr || size < sizeof(nrt_vnc_memory_stats_t)) return NRT_INVALID;
  stats->bytes_used = runtime.used(core);
  stats->bytes_limit = runtime.hbm_per_core();
  if (written != nullptr) *written = sizeof(nrt_vnc_memory_stats_t);
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_tensor_allocate(
    nrt_tensor_placement_t placement, int vnc, size_t size, const char* name,
    nrt_tensor_t** tensor) {
  FAKE_NRT_ENTER("nrt_tensor_allocate");
  FAKE_NRT_REQUIRE_UP();
  if (tensor == nullptr) return NRT_INVALID;
  int core = -1;
  if (placement == NRT_TENSOR_PLACEMENT_DEVICE) {
    core = runtime.Absolute(vnc);
    if (core < 0) return NRT_INVALID;
    if (!runtime.Charge(core, size)) return NRT_RESOURCE;
  } else if (placement != NRT_TENSOR_PLACEMENT_HOST) {
    return NRT_INVALID;
  }
  lock.unlock();  // a storage refunds its core under the lock when it dies
  auto storage = std::make_shared<nrt_tensor::Storage>();
  try {
    storage->bytes.assign(size, 0xa5);  // HBM is not cleared for a new tensor
  } catch (const std::bad_alloc&) {
    if (core >= 0) runtime.Refund(core, size);
    return NRT_RESOURCE;
  }
  storage->core = core;
  *tensor = new nrt_tensor{.storage = std::move(storage), .offset = 0, .size = size,
                           .name = name != nullptr ? name : ""};
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) void nrt_tensor_free(nrt_tensor_t** tensor) {
  if (tensor == nullptr || *tensor == nullptr) return;
  delete *tensor;
  *tensor = nullptr;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_tensor_allocate_slice(
    const nrt_tensor_t* source, size_t offset, size_t size, const char* name,
    nrt_tensor_t** slice) {
  FAKE_NRT_ENTER("nrt_tensor_allocate_slice");
  FAKE_NRT_REQUIRE_UP();
  if (source == nullptr || slice == nullptr || !InRange(source, offset, size)) return NRT_INVALID;
  *slice = new nrt_tensor{.storage = source->storage, .offset = source->offset + offset,
                          .size = size, .name = name != nullptr ? name : ""};
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) size_t nrt_tensor_get_size(const nrt_tensor_t* tensor) {
  return tensor == nullptr ? 0 : tensor->size;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_tensor_read(const nrt_tensor_t* tensor,
                                                                 void* buffer, size_t offset,
                                                                 size_t size) {
  FAKE_NRT_ENTER("nrt_tensor_read");
  FAKE_NRT_REQUIRE_UP();
  if (tensor == nullptr || buffer == nullptr || !InRange(tensor, offset, size)) {
    return NRT_INVALID;
  }
  std::memcpy(buffer, Data(tensor) + offset, size);
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_tensor_write(nrt_tensor_t* tensor,
                                                                  const void* buffer,
                                                                  size_t offset, size_t size) {
  FAKE_NRT_ENTER("nrt_tensor_write");
  FAKE_NRT_REQUIRE_UP();
  if (tensor == nullptr || buffer == nullptr || !InRange(tensor, offset, size)) {
    return NRT_INVALID;
  }
  std::memcpy(Data(tensor) + offset, buffer, size);
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_tensor_memset(nrt_tensor_t* tensor,
                                                                   uint64_t offset, int value,
                                                                   size_t size) {
  FAKE_NRT_ENTER("nrt_tensor_memset");
  FAKE_NRT_REQUIRE_UP();
  if (tensor == nullptr || !InRange(tensor, offset, size)) return NRT_INVALID;
  std::memset(Data(tensor) + offset, value, size);
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_tensor_copy(const nrt_tensor_t* source,
                                                                 size_t source_offset,
                                                                 nrt_tensor_t* destination,
                                                                 size_t destination_offset,
                                                                 size_t size) {
  FAKE_NRT_ENTER("nrt_tensor_copy");
  FAKE_NRT_REQUIRE_UP();
  if (source == nullptr || destination == nullptr || !InRange(source, source_offset, size) ||
      !InRange(destination, destination_offset, size)) {
    return NRT_INVALID;
  }
  // Device to device only within one core's HBM, as on Trainium.
  if (source->storage->core != destination->storage->core) return NRT_INVALID;
  std::memmove(Data(destination) + destination_offset, Data(source) + source_offset, size);
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_load(const void* neff, size_t size,
                                                          int32_t vnc, int32_t,
                                                          nrt_model_t** model) {
  FAKE_NRT_ENTER("nrt_load");
  FAKE_NRT_REQUIRE_UP();
  if (neff == nullptr || model == nullptr) return NRT_INVALID;
  const int core = runtime.Absolute(vnc < 0 ? 0 : vnc);
  if (core < 0) return NRT_INVALID;
  absl::StatusOr<neuron::rtd::fake_nrt::FakeModel> spec =
      neuron::rtd::fake_nrt::ParseFakeModel({static_cast<const char*>(neff), size});
  if (!spec.ok()) {
    std::fprintf(stderr, "NRT:nrt_load fake libnrt: %s\n", spec.status().ToString().c_str());
    return NRT_INVALID;
  }
  if (!runtime.Charge(core, size)) return NRT_RESOURCE;
  *model = new nrt_model{.core = core, .spec = *std::move(spec), .hbm_bytes = size};
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_unload(nrt_model_t* model) {
  FAKE_NRT_ENTER("nrt_unload");
  if (model == nullptr) return NRT_INVALID;
  lock.unlock();  // Refund takes the lock
  runtime.Refund(model->core, model->hbm_bytes);
  delete model;
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_get_model_tensor_info(
    nrt_model_t* model, nrt_tensor_info_array_t** info) {
  FAKE_NRT_ENTER("nrt_get_model_tensor_info");
  FAKE_NRT_REQUIRE_UP();
  if (model == nullptr || info == nullptr) return NRT_INVALID;
  const std::vector<FakeTensorSpec>& io = model->spec.io;
  auto* array = static_cast<nrt_tensor_info_array_t*>(
      std::calloc(1, sizeof(nrt_tensor_info_array_t) + io.size() * sizeof(nrt_tensor_info_t)));
  array->tensor_count = io.size();
  for (size_t i = 0; i < io.size(); ++i) {
    nrt_tensor_info_t& entry = array->tensor_array[i];
    std::snprintf(entry.name, sizeof(entry.name), "%s", io[i].name.c_str());
    entry.usage = io[i].input ? NRT_TENSOR_USAGE_INPUT : NRT_TENSOR_USAGE_OUTPUT;
    entry.size = io[i].bytes();
    entry.dtype = 0xA;  // float32 in the hardware codes of 2.x runtimes
    entry.ndim = static_cast<uint32_t>(io[i].shape.size());
    entry.shape = static_cast<uint32_t*>(std::calloc(entry.ndim + 1, sizeof(uint32_t)));
    for (uint32_t d = 0; d < entry.ndim; ++d) entry.shape[d] = io[i].shape[d];
  }
  *info = array;
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_free_model_tensor_info(
    nrt_tensor_info_array_t* info) {
  if (info == nullptr) return NRT_INVALID;
  for (uint64_t i = 0; i < info->tensor_count; ++i) std::free(info->tensor_array[i].shape);
  std::free(info);
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_allocate_tensor_set(nrt_tensor_set_t** set) {
  FAKE_NRT_ENTER("nrt_allocate_tensor_set");
  if (set == nullptr) return NRT_INVALID;
  *set = new TensorSet();
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) void nrt_destroy_tensor_set(nrt_tensor_set_t** set) {
  if (set == nullptr || *set == nullptr) return;
  delete static_cast<TensorSet*>(*set);
  *set = nullptr;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_add_tensor_to_tensor_set(
    nrt_tensor_set_t* set, const char* name, nrt_tensor_t* tensor) {
  if (set == nullptr || name == nullptr || tensor == nullptr) return NRT_INVALID;
  static_cast<TensorSet*>(set)->tensors[name] = tensor;
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) NRT_STATUS nrt_execute(nrt_model_t* model,
                                                             const nrt_tensor_set_t* inputs,
                                                             nrt_tensor_set_t* outputs) {
  FAKE_NRT_ENTER("nrt_execute");
  FAKE_NRT_REQUIRE_UP();
  if (model == nullptr || inputs == nullptr || outputs == nullptr) return NRT_INVALID;
  if (runtime.unrecoverable(model->core)) return NRT_EXEC_UNIT_UNRECOVERABLE;
  const auto& in = static_cast<const TensorSet*>(inputs)->tensors;
  const auto& out = static_cast<TensorSet*>(outputs)->tensors;
  std::vector<const float*> input_data;
  std::vector<float*> output_data;
  for (const FakeTensorSpec& spec : model->spec.io) {
    const auto& set = spec.input ? in : out;
    auto it = set.find(spec.name);
    if (it == set.end()) {
      std::fprintf(stderr, "NRT:nrt_execute missing %s tensor %s\n",
                   spec.input ? "input" : "output", spec.name.c_str());
      return spec.input ? NRT_EXEC_BAD_INPUT : NRT_INVALID;
    }
    const nrt_tensor_t* tensor = it->second;
    if (tensor->size != spec.bytes() || tensor->storage->core != model->core) {
      std::fprintf(stderr, "NRT:nrt_execute tensor %s: %zu bytes on core %d; the model wants %lu "
                           "on core %d\n",
                   spec.name.c_str(), tensor->size, tensor->storage->core,
                   static_cast<unsigned long>(spec.bytes()), model->core);
      return NRT_INVALID;
    }
    if (spec.input) {
      input_data.push_back(reinterpret_cast<const float*>(Data(tensor)));
    } else {
      output_data.push_back(reinterpret_cast<float*>(Data(tensor)));
    }
  }
  const uint64_t delay = runtime.exec_delay_us();
  lock.unlock();
  if (delay > 0) ::usleep(static_cast<useconds_t>(delay));
  neuron::rtd::fake_nrt::RunFakeModel(model->spec, input_data, output_data);
  return NRT_SUCCESS;
}

__attribute__((visibility("default"))) const char* nrt_get_status_as_str(NRT_STATUS status) {
  switch (status) {
    case NRT_SUCCESS: return "Success";
    case NRT_FAILURE: return "Non specific failure";
    case NRT_INVALID: return "Invalid NEFF, bad instruction, bad DMA descriptor, input tensor name/size does not match the model, etc.";
    case NRT_INVALID_HANDLE: return "Invalid handle";
    case NRT_RESOURCE: return "Failed to allocate a resource for requested operation";
    case NRT_TIMEOUT: return "Operation timed out";
    case NRT_HW_ERROR: return "Hardware failure";
    case NRT_QUEUE_FULL: return "Not enough space in the execution input queue";
    case NRT_LOAD_NOT_ENOUGH_NC: return "Failed to allocate enough NCs for loading a NEFF";
    case NRT_UNSUPPORTED_NEFF_VERSION: return "Unsupported version of NEFF";
    case NRT_UNINITIALIZED: return "Returned when attempting an API call when the library is not initialized";
    case NRT_CLOSED: return "Returned when attempting an API call after nrt_close() was called";
    case NRT_EXEC_UNIT_UNRECOVERABLE: return "Execution unit is in an unrecoverable state";
    case NRT_EXEC_BAD_INPUT: return "Invalid input has been submitted to exec()";
    case NRT_EXEC_COMPLETED_WITH_NUM_ERR: return "Execution was completed with numerical errors (produced NaN)";
    case NRT_EXEC_COMPLETED_WITH_ERR: return "Execution was completed with other errors";
    case NRT_EXEC_NC_BUSY: return "The neuron core is locked (in use) by another model/process";
    case NRT_EXEC_OOB: return "One or more indirect memcopies and/or embedding updates are out of bound";
    default: return "Unknown status";
  }
}

}  // extern "C"

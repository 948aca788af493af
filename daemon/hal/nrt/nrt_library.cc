#include "daemon/hal/nrt/nrt_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace neuron::rtd::hal::nrt {
namespace {

template <typename Function>
void Resolve(void* handle, const char* name, Function& slot, std::vector<std::string>* missing) {
  slot = reinterpret_cast<Function>(::dlsym(handle, name));
  if (slot == nullptr && missing != nullptr) missing->push_back(name);
}

absl::StatusCode CodeOf(NRT_STATUS status) {
  switch (status) {
    case NRT_SUCCESS:
      return absl::StatusCode::kOk;
    case NRT_INVALID:
    case NRT_INVALID_HANDLE:
    case NRT_EXEC_BAD_INPUT:
    case NRT_UNSUPPORTED_NEFF_VERSION:
      return absl::StatusCode::kInvalidArgument;
    case NRT_RESOURCE:
    case NRT_LOAD_NOT_ENOUGH_NC:
    case NRT_QUEUE_FULL:
      return absl::StatusCode::kResourceExhausted;
    case NRT_TIMEOUT:
      return absl::StatusCode::kDeadlineExceeded;
    case NRT_EXEC_OOB:
      return absl::StatusCode::kOutOfRange;
    case NRT_EXEC_NC_BUSY:
      return absl::StatusCode::kUnavailable;
    case NRT_UNINITIALIZED:
    case NRT_CLOSED:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<NrtLibrary>> NrtLibrary::Open(
    const std::vector<std::string>& candidates) {
  std::vector<std::string> failures;
  for (const std::string& candidate : candidates) {
    ::dlerror();
    void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      failures.push_back(why != nullptr ? why : candidate);
      continue;
    }
    std::unique_ptr<NrtLibrary> library(new NrtLibrary(handle, candidate));
    NrtApi& api = library->api_;
    std::vector<std::string> missing;
    Resolve(handle, "nrt_init", api.init, &missing);
    Resolve(handle, "nrt_close", api.close, &missing);
    Resolve(handle, "nrt_get_total_nc_count", api.get_total_nc_count, &missing);
    Resolve(handle, "nrt_get_visible_nc_count", api.get_visible_nc_count, &missing);
    Resolve(handle, "nrt_load", api.load, &missing);
    Resolve(handle, "nrt_unload", api.unload, &missing);
    Resolve(handle, "nrt_get_model_tensor_info", api.get_model_tensor_info, &missing);
    Resolve(handle, "nrt_free_model_tensor_info", api.free_model_tensor_info, &missing);
    Resolve(handle, "nrt_allocate_tensor_set", api.allocate_tensor_set, &missing);
    Resolve(handle, "nrt_destroy_tensor_set", api.destroy_tensor_set, &missing);
    Resolve(handle, "nrt_add_tensor_to_tensor_set", api.add_tensor_to_tensor_set, &missing);
    Resolve(handle, "nrt_execute", api.execute, &missing);
    Resolve(handle, "nrt_tensor_allocate", api.tensor_allocate, &missing);
    Resolve(handle, "nrt_tensor_free", api.tensor_free, &missing);
    Resolve(handle, "nrt_tensor_read", api.tensor_read, &missing);
    Resolve(handle, "nrt_tensor_write", api.tensor_write, &missing);
    Resolve(handle, "nrt_tensor_copy", api.tensor_copy, &missing);
    Resolve(handle, "nrt_tensor_get_size", api.tensor_get_size, &missing);
    Resolve(handle, "nrt_tensor_allocate_slice", api.tensor_allocate_slice, &missing);
    Resolve(handle, "nrt_get_status_as_str", api.get_status_as_str, &missing);
    if (!missing.empty()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s is not a usable Neuron runtime: it lacks %s", candidate,
          absl::StrJoin(missing, ", ")));
    }
    Resolve(handle, "nrt_get_version", api.get_version, nullptr);
    Resolve(handle, "nrt_get_instance_info", api.get_instance_info, nullptr);
    Resolve(handle, "nrt_get_vnc_memory_stats", api.get_vnc_memory_stats, nullptr);
    Resolve(handle, "nrt_tensor_memset", api.tensor_memset, nullptr);
    if (api.get_version != nullptr) {
      nrt_version_t version{};
      if (api.get_version(&version, sizeof(version)) == NRT_SUCCESS) {
        library->major_ = version.rt_major;
        library->version_ = absl::StrFormat("%d.%d.%d", version.rt_major, version.rt_minor,
                                            version.rt_patch);
      }
    }
    return library;
  }
  return absl::FailedPreconditionError(absl::StrFormat(
      "cannot load the Neuron runtime library (tried %s): %s. Install aws-neuronx-runtime-lib, "
      "or point [device] nrt_library (--nrt-library) at libnrt.so.1",
      absl::StrJoin(candidates, ", "), absl::StrJoin(failures, "; ")));
}

NrtLibrary::~NrtLibrary() { ::dlclose(handle_); }

absl::Status NrtLibrary::ToStatus(NRT_STATUS status, std::string_view what) const {
  if (status == NRT_SUCCESS) return absl::OkStatus();
  const char* text = api_.get_status_as_str != nullptr ? api_.get_status_as_str(status) : nullptr;
  return absl::Status(CodeOf(status),
                      absl::StrFormat("%s: %s (%d): %s", std::string(what), NrtStatusName(status),
                                      static_cast<int>(status), text != nullptr ? text : ""));
}

std::string NrtStatusName(NRT_STATUS status) {
  switch (status) {
    case NRT_SUCCESS: return "NRT_SUCCESS";
    case NRT_FAILURE: return "NRT_FAILURE";
    case NRT_INVALID: return "NRT_INVALID";
    case NRT_INVALID_HANDLE: return "NRT_INVALID_HANDLE";
    case NRT_RESOURCE: return "NRT_RESOURCE";
    case NRT_TIMEOUT: return "NRT_TIMEOUT";
    case NRT_HW_ERROR: return "NRT_HW_ERROR";
    case NRT_QUEUE_FULL: return "NRT_QUEUE_FULL";
    case NRT_LOAD_NOT_ENOUGH_NC: return "NRT_LOAD_NOT_ENOUGH_NC";
    case NRT_UNSUPPORTED_NEFF_VERSION: return "NRT_UNSUPPORTED_NEFF_VERSION";
    case NRT_UNINITIALIZED: return "NRT_UNINITIALIZED";
    case NRT_CLOSED: return "NRT_CLOSED";
    case NRT_QUEUE_EMPTY: return "NRT_QUEUE_EMPTY";
    case NRT_EXEC_UNIT_UNRECOVERABLE: return "NRT_EXEC_UNIT_UNRECOVERABLE";
    case NRT_EXEC_BAD_INPUT: return "NRT_EXEC_BAD_INPUT";
    case NRT_EXEC_COMPLETED_WITH_NUM_ERR: return "NRT_EXEC_COMPLETED_WITH_NUM_ERR";
    case NRT_EXEC_COMPLETED_WITH_ERR: return "NRT_EXEC_COMPLETED_WITH_ERR";
    case NRT_EXEC_NC_BUSY: return "NRT_EXEC_NC_BUSY";
    case NRT_EXEC_OOB: return "NRT_EXEC_OOB";
    case NRT_COLL_PENDING: return "NRT_COLL_PENDING";
    case NRT_EXEC_HW_ERR_COLLECTIVES: return "NRT_EXEC_HW_ERR_COLLECTIVES";
    case NRT_EXEC_HW_ERR_HBM_UE: return "NRT_EXEC_HW_ERR_HBM_UE";
    case NRT_EXEC_HW_ERR_NC_UE: return "NRT_EXEC_HW_ERR_NC_UE";
    case NRT_EXEC_HW_ERR_DMA_ABORT: return "NRT_EXEC_HW_ERR_DMA_ABORT";
    case NRT_EXEC_SW_NQ_OVERFLOW: return "NRT_EXEC_SW_NQ_OVERFLOW";
    case NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE: return "NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE";
  }
  return absl::StrCat("NRT_STATUS_", static_cast<int>(status));
}

bool IsCoreFatal(NRT_STATUS status) {
  switch (status) {
    case NRT_EXEC_UNIT_UNRECOVERABLE:
    case NRT_HW_ERROR:
    case NRT_EXEC_HW_ERR_COLLECTIVES:
    case NRT_EXEC_HW_ERR_HBM_UE:
    case NRT_EXEC_HW_ERR_NC_UE:
    case NRT_EXEC_HW_ERR_DMA_ABORT:
      return true;
    default:
      return false;
  }
}

}  // namespace neuron::rtd::hal::nrt

// libnrt.so.1, loaded at run time: the daemon never links AWS's runtime, so
// one binary serves hosts with and without Trainium, and the tests swap in a
// fake. Loaded with dlopen(RTLD_NOW | RTLD_LOCAL); every function the backend
// calls is resolved once here.
#ifndef NEURON_RTD_DAEMON_HAL_NRT_NRT_LIBRARY_H_
#define NEURON_RTD_DAEMON_HAL_NRT_NRT_LIBRARY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/hal/nrt/nrt_api.h"

namespace neuron::rtd::hal::nrt {

// The resolved entry points. Required ones are never null; optional ones
// are null when the runtime lacks them.
struct NrtApi {
  decltype(&nrt_init) init = nullptr;
  decltype(&nrt_close) close = nullptr;
  decltype(&nrt_get_total_nc_count) get_total_nc_count = nullptr;
  decltype(&nrt_get_visible_nc_count) get_visible_nc_count = nullptr;
  decltype(&nrt_load) load = nullptr;
  decltype(&nrt_unload) unload = nullptr;
  decltype(&nrt_get_model_tensor_info) get_model_tensor_info = nullptr;
  decltype(&nrt_free_model_tensor_info) free_model_tensor_info = nullptr;
  decltype(&nrt_allocate_tensor_set) allocate_tensor_set = nullptr;
  decltype(&nrt_destroy_tensor_set) destroy_tensor_set = nullptr;
  decltype(&nrt_add_tensor_to_tensor_set) add_tensor_to_tensor_set = nullptr;
  decltype(&nrt_execute) execute = nullptr;
  decltype(&nrt_tensor_allocate) tensor_allocate = nullptr;
  decltype(&nrt_tensor_free) tensor_free = nullptr;
  decltype(&nrt_tensor_read) tensor_read = nullptr;
  decltype(&nrt_tensor_write) tensor_write = nullptr;
  decltype(&nrt_tensor_copy) tensor_copy = nullptr;
  decltype(&nrt_tensor_get_size) tensor_get_size = nullptr;
  decltype(&nrt_tensor_allocate_slice) tensor_allocate_slice = nullptr;
  decltype(&nrt_get_status_as_str) get_status_as_str = nullptr;
  // Optional.
  decltype(&nrt_get_version) get_version = nullptr;
  decltype(&nrt_get_instance_info) get_instance_info = nullptr;
  decltype(&nrt_get_vnc_memory_stats) get_vnc_memory_stats = nullptr;
  decltype(&nrt_tensor_memset) tensor_memset = nullptr;
};

// Thread-safety: immutable after Open; the API's own rules apply to calls.
// Lifetime: unloads the library when destroyed; every model and tensor must
// be gone and nrt_close called first.
class NrtLibrary {
 public:
  // Loads the first of `candidates` that dlopen finds (a name is searched as
  // dlopen searches; a path is taken as is) and resolves the API.
  // FAILED_PRECONDITION naming what was tried when none loads, or the
  // required symbols the loaded one lacks.
  static absl::StatusOr<std::unique_ptr<NrtLibrary>> Open(
      const std::vector<std::string>& candidates);

  NrtLibrary(const NrtLibrary&) = delete;
  NrtLibrary& operator=(const NrtLibrary&) = delete;
  ~NrtLibrary();

  const NrtApi& api() const { return api_; }
  // Where it was loaded from (as dlopen was given it).
  const std::string& path() const { return path_; }
  // "2.34.10", or "unknown" when the runtime has no nrt_get_version.
  const std::string& version() const { return version_; }
  uint64_t major() const { return major_; }

  // `status` as an absl::Status of the matching code, whose message starts
  // with `what` and carries libnrt's own text and the number:
  // "nrt_load: NRT_INVALID (2): Invalid NEFF ...".
  absl::Status ToStatus(NRT_STATUS status, std::string_view what) const;

 private:
  NrtLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  void* handle_;
  std::string path_;
  NrtApi api_;
  std::string version_ = "unknown";
  uint64_t major_ = 0;
};

// The name of an NRT_STATUS ("NRT_INVALID"), or "NRT_STATUS_<n>".
std::string NrtStatusName(NRT_STATUS status);

// Whether `status` leaves the core unusable until it is reset (libnrt's
// "execution unit unrecoverable" and the hardware fault classes).
bool IsCoreFatal(NRT_STATUS status);

}  // namespace neuron::rtd::hal::nrt

#endif  // NEURON_RTD_DAEMON_HAL_NRT_NRT_LIBRARY_H_

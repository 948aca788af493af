#include "daemon/fabric/libfabric_library.h"

#include <dlfcn.h>

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace neuron::rtd::fabric {
namespace {

template <typename Function>
void Resolve(void* handle, const char* name, Function& slot, std::vector<std::string>& missing) {
  slot = reinterpret_cast<Function>(::dlsym(handle, name));
  if (slot == nullptr) missing.push_back(name);
}

}  // namespace

absl::StatusOr<std::unique_ptr<LibfabricLibrary>> LibfabricLibrary::Open(const std::string& path) {
  ::dlerror();
  // RTLD_NODELETE: libfabric and the providers' libraries keep state from
  // their constructors for the process's life; unloading them would leave
  // it unreachable (and unnamed in leak reports).
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot load libfabric (%s): %s; install it (Debian: libfabric1; on trn hosts AWS's "
        "EFA installer puts it in /opt/amazon/efa/lib) or set [fabric] library",
        path, why != nullptr ? why : "unknown error"));
  }
  std::unique_ptr<LibfabricLibrary> library(new LibfabricLibrary(handle, path));
  std::vector<std::string> missing;
  Resolve(handle, "fi_version", library->version, missing);
  Resolve(handle, "fi_getinfo", library->getinfo, missing);
  Resolve(handle, "fi_freeinfo", library->freeinfo, missing);
  Resolve(handle, "fi_dupinfo", library->dupinfo, missing);
  Resolve(handle, "fi_fabric", library->open_fabric, missing);
  Resolve(handle, "fi_strerror", library->strerror, missing);
  if (!missing.empty()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s is not a usable libfabric: it lacks %s", path, absl::StrJoin(missing, ", ")));
  }
  return library;
}

LibfabricLibrary::~LibfabricLibrary() { ::dlclose(handle_); }

}  // namespace neuron::rtd::fabric

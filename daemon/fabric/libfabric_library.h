// libfabric's exported entry points, resolved with dlopen at run time so
// that the daemon runs (and its package installs) without libfabric when no
// fabric is configured. Everything else in libfabric's API is an inline
// call through the objects these return.
//
// Thread-safety: immutable after Open. Lifetime: the library stays loaded
// until this object is destroyed; destroy it after every fabric object.
#ifndef NEURON_RTD_DAEMON_FABRIC_LIBFABRIC_LIBRARY_H_
#define NEURON_RTD_DAEMON_FABRIC_LIBFABRIC_LIBRARY_H_

#include <rdma/fabric.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace neuron::rtd::fabric {

class LibfabricLibrary {
 public:
  // Loads `path` (a name the dynamic linker searches for, or a path).
  // FAILED_PRECONDITION naming the path and the loader's reason when it
  // cannot, or when a required symbol is missing.
  static absl::StatusOr<std::unique_ptr<LibfabricLibrary>> Open(const std::string& path);
  LibfabricLibrary(const LibfabricLibrary&) = delete;
  LibfabricLibrary& operator=(const LibfabricLibrary&) = delete;
  ~LibfabricLibrary();

  uint32_t (*version)() = nullptr;
  int (*getinfo)(uint32_t version, const char* node, const char* service, uint64_t flags,
                 const struct fi_info* hints, struct fi_info** info) = nullptr;
  void (*freeinfo)(struct fi_info* info) = nullptr;
  struct fi_info* (*dupinfo)(const struct fi_info* info) = nullptr;
  int (*open_fabric)(struct fi_fabric_attr* attr, struct fid_fabric** fabric,
                     void* context) = nullptr;
  const char* (*strerror)(int errnum) = nullptr;

  const std::string& path() const { return path_; }

 private:
  LibfabricLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  void* handle_;
  std::string path_;
};

}  // namespace neuron::rtd::fabric

#endif  // NEURON_RTD_DAEMON_FABRIC_LIBFABRIC_LIBRARY_H_

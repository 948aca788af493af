#include "daemon/memory/shared_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"

namespace neuron::rtd::memory {

absl::StatusOr<std::unique_ptr<SharedRegion>> SharedRegion::Create(uint64_t id, uint32_t kind,
                                                                   uint64_t size,
                                                                   const std::string& name) {
  if (size == 0) return absl::InvalidArgumentError("shared region of 0 bytes");
  const int fd = ::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return absl::ErrnoToStatus(errno, "memfd_create");
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int error = errno;
    ::close(fd);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot size shared region '%s' to %d bytes: %s", name, size, std::strerror(error)));
  }
  void* data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    const int error = errno;
    ::close(fd);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot map shared region '%s' of %d bytes: %s", name, size, std::strerror(error)));
  }
  return std::unique_ptr<SharedRegion>(new SharedRegion(id, kind, size, fd, data));
}

SharedRegion::~SharedRegion() {
  ::munmap(data_, size_);
  ::close(fd_);
}

char* SharedRegion::Slice(uint64_t offset, uint64_t length) const {
  if (offset > size_ || length > size_ - offset) return nullptr;
  return data() + offset;
}

}  // namespace neuron::rtd::memory

#include "daemon/common/os_sys_calls.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace neuron::rtd {
namespace {

SysCallInt FromInt(int rc) { return {rc, rc < 0 ? errno : 0}; }

class OsSysCallsImpl final : public OsSysCalls {
 public:
  SysCallInt Socket(int domain, int type, int protocol) override {
    return FromInt(::socket(domain, type, protocol));
  }
  SysCallInt Bind(int fd, const sockaddr* addr, socklen_t len) override {
    return FromInt(::bind(fd, addr, len));
  }
  SysCallInt Listen(int fd, int backlog) override { return FromInt(::listen(fd, backlog)); }
  SysCallInt Accept(int fd, int flags) override {
    return FromInt(::accept4(fd, nullptr, nullptr, flags));
  }
  SysCallInt Connect(int fd, const sockaddr* addr, socklen_t len) override {
    return FromInt(::connect(fd, addr, len));
  }
  SysCallInt GetSockOpt(int fd, int level, int name, void* value, socklen_t* len) override {
    return FromInt(::getsockopt(fd, level, name, value, len));
  }
  SysCallInt Close(int fd) override { return FromInt(::close(fd)); }
  SysCallInt Open(const std::string& path, int flags, mode_t mode) override {
    return FromInt(::open(path.c_str(), flags, mode));
  }
  SysCallInt Flock(int fd, int operation) override { return FromInt(::flock(fd, operation)); }
  SysCallInt Unlink(const std::string& path) override { return FromInt(::unlink(path.c_str())); }
  SysCallInt Mkdir(const std::string& path, mode_t mode) override {
    return FromInt(::mkdir(path.c_str(), mode));
  }
  SysCallInt Chmod(const std::string& path, mode_t mode) override {
    return FromInt(::chmod(path.c_str(), mode));
  }
  SysCallInt Chown(const std::string& path, uid_t uid, gid_t gid) override {
    return FromInt(::chown(path.c_str(), uid, gid));
  }
  SysCallInt Stat(const std::string& path, struct stat* out) override {
    return FromInt(::stat(path.c_str(), out));
  }
  SysCallInt Fstat(int fd, struct stat* out) override { return FromInt(::fstat(fd, out)); }
  SysCallInt Lstat(const std::string& path, struct stat* out) override {
    return FromInt(::lstat(path.c_str(), out));
  }
  SysCallPtr Mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) override {
    void* result = ::mmap(addr, length, prot, flags, fd, offset);
    return {result, result == MAP_FAILED ? errno : 0};
  }
  SysCallInt Munmap(void* addr, size_t length) override { return FromInt(::munmap(addr, length)); }
  SysCallInt Mprotect(void* addr, size_t length, int prot) override {
    return FromInt(::mprotect(addr, length, prot));
  }
  SysCallInt Madvise(void* addr, size_t length, int advice) override {
    return FromInt(::madvise(addr, length, advice));
  }
};

}  // namespace

OsSysCalls& DefaultOsSysCalls() {
  static OsSysCallsImpl* const instance = new OsSysCallsImpl();
  return *instance;
}

}  // namespace neuron::rtd

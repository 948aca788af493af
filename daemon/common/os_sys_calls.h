// The system calls the daemon makes, behind an interface so that tests can
// fail any of them (as Envoy's Api::OsSysCalls). Production code takes an
// OsSysCalls& and is handed DefaultOsSysCalls().
#ifndef NEURON_RTD_DAEMON_COMMON_OS_SYS_CALLS_H_
#define NEURON_RTD_DAEMON_COMMON_OS_SYS_CALLS_H_

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <string>

namespace neuron::rtd {

// The result of a system call: its return value, and errno when it failed.
template <typename T>
struct SysCallResult {
  T value;
  int error;  // 0 on success

  bool ok() const { return error == 0; }
};

using SysCallInt = SysCallResult<int>;
using SysCallPtr = SysCallResult<void*>;

// Thread-safety: implementations are stateless and safe from any thread.
class OsSysCalls {
 public:
  virtual ~OsSysCalls() = default;

  virtual SysCallInt Socket(int domain, int type, int protocol) = 0;
  virtual SysCallInt Bind(int fd, const sockaddr* addr, socklen_t len) = 0;
  virtual SysCallInt Listen(int fd, int backlog) = 0;
  virtual SysCallInt Accept(int fd, int flags) = 0;
  virtual SysCallInt Connect(int fd, const sockaddr* addr, socklen_t len) = 0;
  virtual SysCallInt GetSockOpt(int fd, int level, int name, void* value, socklen_t* len) = 0;
  virtual SysCallInt Close(int fd) = 0;

  virtual SysCallInt Open(const std::string& path, int flags, mode_t mode) = 0;
  virtual SysCallInt Flock(int fd, int operation) = 0;
  virtual SysCallInt Unlink(const std::string& path) = 0;
  virtual SysCallInt Mkdir(const std::string& path, mode_t mode) = 0;
  virtual SysCallInt Chmod(const std::string& path, mode_t mode) = 0;
  virtual SysCallInt Chown(const std::string& path, uid_t uid, gid_t gid) = 0;
  virtual SysCallInt Stat(const std::string& path, struct stat* out) = 0;
  virtual SysCallInt Lstat(const std::string& path, struct stat* out) = 0;
  virtual SysCallInt Fstat(int fd, struct stat* out) = 0;

  virtual SysCallPtr Mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) = 0;
  virtual SysCallInt Munmap(void* addr, size_t length) = 0;
  virtual SysCallInt Mprotect(void* addr, size_t length, int prot) = 0;
  virtual SysCallInt Madvise(void* addr, size_t length, int advice) = 0;
};

// The real system calls. Lives for the whole process.
OsSysCalls& DefaultOsSysCalls();

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_COMMON_OS_SYS_CALLS_H_

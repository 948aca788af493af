// OsSysCalls for tests: every call goes to the real system unless a test
// sets an expectation that fails it.
#ifndef NEURON_TESTS_TESTING_MOCK_OS_SYS_CALLS_H_
#define NEURON_TESTS_TESTING_MOCK_OS_SYS_CALLS_H_

#include <gmock/gmock.h>

#include "daemon/common/os_sys_calls.h"

namespace neuron::testing {

class MockOsSysCalls : public rtd::OsSysCalls {
 public:
  MockOsSysCalls();

  MOCK_METHOD(rtd::SysCallInt, Socket, (int, int, int), (override));
  MOCK_METHOD(rtd::SysCallInt, Bind, (int, const sockaddr*, socklen_t), (override));
  MOCK_METHOD(rtd::SysCallInt, Listen, (int, int), (override));
  MOCK_METHOD(rtd::SysCallInt, Accept, (int, int), (override));
  MOCK_METHOD(rtd::SysCallInt, Connect, (int, const sockaddr*, socklen_t), (override));
  MOCK_METHOD(rtd::SysCallInt, GetSockOpt, (int, int, int, void*, socklen_t*), (override));
  MOCK_METHOD(rtd::SysCallInt, Close, (int), (override));
  MOCK_METHOD(rtd::SysCallInt, Open, (const std::string&, int, mode_t), (override));
  MOCK_METHOD(rtd::SysCallInt, Flock, (int, int), (override));
  MOCK_METHOD(rtd::SysCallInt, Unlink, (const std::string&), (override));
  MOCK_METHOD(rtd::SysCallInt, Mkdir, (const std::string&, mode_t), (override));
  MOCK_METHOD(rtd::SysCallInt, Chmod, (const std::string&, mode_t), (override));
  MOCK_METHOD(rtd::SysCallInt, Chown, (const std::string&, uid_t, gid_t), (override));
  MOCK_METHOD(rtd::SysCallInt, Stat, (const std::string&, struct stat*), (override));
  MOCK_METHOD(rtd::SysCallInt, Lstat, (const std::string&, struct stat*), (override));
  MOCK_METHOD(rtd::SysCallInt, Fstat, (int, struct stat*), (override));
  MOCK_METHOD(rtd::SysCallPtr, Mmap, (void*, size_t, int, int, int, off_t), (override));
  MOCK_METHOD(rtd::SysCallInt, Munmap, (void*, size_t), (override));
  MOCK_METHOD(rtd::SysCallInt, Mprotect, (void*, size_t, int), (override));
  MOCK_METHOD(rtd::SysCallInt, Madvise, (void*, size_t, int), (override));
};

// A failed call's result.
inline rtd::SysCallInt Fails(int error) { return {-1, error}; }

}  // namespace neuron::testing

#endif  // NEURON_TESTS_TESTING_MOCK_OS_SYS_CALLS_H_

#include "testing/mock_os_sys_calls.h"

namespace neuron::testing {

using ::testing::_;

MockOsSysCalls::MockOsSysCalls() {
  rtd::OsSysCalls& real = rtd::DefaultOsSysCalls();
  ON_CALL(*this, Socket(_, _, _)).WillByDefault([&real](int d, int t, int p) {
    return real.Socket(d, t, p);
  });
  ON_CALL(*this, Bind(_, _, _)).WillByDefault([&real](int fd, const sockaddr* a, socklen_t l) {
    return real.Bind(fd, a, l);
  });
  ON_CALL(*this, Listen(_, _)).WillByDefault([&real](int fd, int b) { return real.Listen(fd, b); });
  ON_CALL(*this, Accept(_, _)).WillByDefault([&real](int fd, int f) { return real.Accept(fd, f); });
  ON_CALL(*this, Connect(_, _, _)).WillByDefault([&real](int fd, const sockaddr* a, socklen_t l) {
    return real.Connect(fd, a, l);
  });
  ON_CALL(*this, GetSockOpt(_, _, _, _, _))
      .WillByDefault([&real](int fd, int level, int name, void* value, socklen_t* length) {
        return real.GetSockOpt(fd, level, name, value, length);
      });
  ON_CALL(*this, Close(_)).WillByDefault([&real](int fd) { return real.Close(fd); });
  ON_CALL(*this, Open(_, _, _)).WillByDefault([&real](const std::string& p, int f, mode_t m) {
    return real.Open(p, f, m);
  });
  ON_CALL(*this, Flock(_, _)).WillByDefault([&real](int fd, int op) { return real.Flock(fd, op); });
  ON_CALL(*this, Unlink(_)).WillByDefault([&real](const std::string& p) { return real.Unlink(p); });
  ON_CALL(*this, Mkdir(_, _)).WillByDefault([&real](const std::string& p, mode_t m) {
    return real.Mkdir(p, m);
  });
  ON_CALL(*this, Chmod(_, _)).WillByDefault([&real](const std::string& p, mode_t m) {
    return real.Chmod(p, m);
  });
  ON_CALL(*this, Chown(_, _, _)).WillByDefault([&real](const std::string& p, uid_t u, gid_t g) {
    return real.Chown(p, u, g);
  });
  ON_CALL(*this, Stat(_, _)).WillByDefault([&real](const std::string& p, struct stat* s) {
    return real.Stat(p, s);
  });
  ON_CALL(*this, Fstat(_, _)).WillByDefault([&real](int fd, struct stat* s) {
    return real.Fstat(fd, s);
  });
  ON_CALL(*this, Lstat(_, _)).WillByDefault([&real](const std::string& p, struct stat* s) {
    return real.Lstat(p, s);
  });
  ON_CALL(*this, Mmap(_, _, _, _, _, _))
      .WillByDefault([&real](void* a, size_t l, int p, int f, int fd, off_t o) {
        return real.Mmap(a, l, p, f, fd, o);
      });
  ON_CALL(*this, Munmap(_, _)).WillByDefault([&real](void* a, size_t l) {
    return real.Munmap(a, l);
  });
  ON_CALL(*this, Mprotect(_, _, _)).WillByDefault([&real](void* a, size_t l, int p) {
    return real.Mprotect(a, l, p);
  });
  ON_CALL(*this, Madvise(_, _, _)).WillByDefault([&real](void* a, size_t l, int advice) {
    return real.Madvise(a, l, advice);
  });
}

}  // namespace neuron::testing

// Plain Unix-socket operations for tests.
#ifndef NEURON_TESTS_TESTING_UNIX_SOCKET_H_
#define NEURON_TESTS_TESTING_UNIX_SOCKET_H_

#include <sys/un.h>

#include <string>

namespace neuron::testing {

sockaddr_un UnixAddress(const std::string& path);

// A connected stream socket, or -1.
int ConnectUnix(const std::string& path);

// Leaves a socket file at `path` with nobody listening, as a daemon that was
// killed does. Returns false when it cannot.
bool MakeStaleSocket(const std::string& path);

}  // namespace neuron::testing

#endif  // NEURON_TESTS_TESTING_UNIX_SOCKET_H_

// This host's name as it may appear in a file name: what tells the daemons
// sharing a directory on a network file system apart.
#ifndef NEURON_RTD_DAEMON_COMMON_HOST_NAME_H_
#define NEURON_RTD_DAEMON_COMMON_HOST_NAME_H_

#include <string>

namespace neuron::rtd {

// gethostname(2) with every character but letters, digits, '-' and '.'
// replaced by '_'; "host" when it has none.
std::string FileNameSafeHostName();

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_COMMON_HOST_NAME_H_

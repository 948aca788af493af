#include "daemon/common/host_name.h"

#include <unistd.h>

#include <cctype>

namespace neuron::rtd {

std::string FileNameSafeHostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "host";
  std::string name(host);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  }
  // "." and ".." name directories.
  if (name.empty() || name.find_first_not_of('.') == std::string::npos) return "host";
  return name;
}

}  // namespace neuron::rtd

// Reading one attribute file of the Neuron driver's sysfs tree.
#ifndef NEURON_RTD_DAEMON_HAL_NRT_INTERNAL_SYSFS_ATTRIBUTE_H_
#define NEURON_RTD_DAEMON_HAL_NRT_INTERNAL_SYSFS_ATTRIBUTE_H_

#include <filesystem>
#include <string>

namespace neuron::rtd::hal::nrt::internal {

// The attribute's text (at most a page, as sysfs serves) without surrounding
// white space; empty when it cannot be read.
std::string ReadSysfsAttribute(const std::filesystem::path& path);

}  // namespace neuron::rtd::hal::nrt::internal

#endif  // NEURON_RTD_DAEMON_HAL_NRT_INTERNAL_SYSFS_ATTRIBUTE_H_

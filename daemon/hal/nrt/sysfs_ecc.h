// A chip's ECC error counts as the Neuron driver serves them in sysfs:
// neuron<N>/stats/hardware/{mem_ecc_uncorrected, sram_ecc_uncorrected,
// mem_ecc_repairable_uncorrected}, each a decimal and a newline, readable
// by every user (drivers 2.14 to 2.30, trn1 and later; the repairable one
// from 2.23). Each read is the firmware's register now, 16 bits a channel,
// counted since the device was last reset; on trn2 an HBM error waiting for
// row repair shows as repairable instead of uncorrected. Driver 2.30.2
// added mem_ecc_corrected and sram_ecc_corrected nodes at a path its notes
// do not give: read from the same directory when there.
#ifndef NEURON_RTD_DAEMON_HAL_NRT_SYSFS_ECC_H_
#define NEURON_RTD_DAEMON_HAL_NRT_SYSFS_ECC_H_

#include <string>

#include "daemon/hal/device_telemetry.h"

namespace neuron::rtd::hal::nrt {

// The counts of chip `device_dir` (e.g. /sys/devices/virtual/neuron_device/
// neuron3); a count whose file is missing or not a decimal stays unknown.
EccCounts ReadSysfsEcc(const std::string& device_dir);

}  // namespace neuron::rtd::hal::nrt

#endif  // NEURON_RTD_DAEMON_HAL_NRT_SYSFS_ECC_H_

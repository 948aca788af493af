// A fake of the Neuron driver's sysfs device directories
// (/sys/devices/virtual/neuron_device/neuron<N>/) in the driver's formats,
// for daemon/hal/nrt/sysfs_topology.h.
#ifndef NEURON_TESTS_TESTING_FAKE_NEURON_SYSFS_H_
#define NEURON_TESTS_TESTING_FAKE_NEURON_SYSFS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace neuron::testing {

struct FakeNeuronDevice {
  uint32_t index = 0;
  uint32_t physical_cores = 8;
  std::string device_name = "Trainium2";
  std::string instance_type = "Trn2";
  std::vector<uint32_t> connected_devices;
  // Without core_count (root-only before driver 2.28): the cores are known
  // by their neuron_core<C> directories only.
  bool core_count_readable = true;
  // stats/hardware/{mem_ecc_uncorrected, mem_ecc_repairable_uncorrected,
  // sram_ecc_uncorrected}; none when unset (an older driver).
  std::optional<uint32_t> mem_ecc_uncorrected;
  std::optional<uint32_t> mem_ecc_repairable_uncorrected;
  std::optional<uint32_t> sram_ecc_uncorrected;
  // neuron_core<C>/stats/memory_usage/device_mem/<category>/{present,total,
  // peak} of the physical cores listed (present as given, total and peak
  // twice it); cores not listed have no memory_usage nodes.
  std::map<uint32_t, std::map<std::string, uint64_t>> core_memory;
};

// Writes `root`/neuron<N>/ for each device; `root` is created as needed.
void WriteFakeNeuronSysfs(const std::string& root, const std::vector<FakeNeuronDevice>& devices);

}  // namespace neuron::testing

#endif  // NEURON_TESTS_TESTING_FAKE_NEURON_SYSFS_H_

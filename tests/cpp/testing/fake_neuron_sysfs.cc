#include "testing/fake_neuron_sysfs.h"

#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace neuron::testing {
namespace {

void Write(const std::filesystem::path& path, const std::string& contents) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << contents;
}

}  // namespace

void WriteFakeNeuronSysfs(const std::string& root, const std::vector<FakeNeuronDevice>& devices) {
  for (const FakeNeuronDevice& device : devices) {
    const std::filesystem::path dir =
        std::filesystem::path(root) / absl::StrCat("neuron", device.index);
    // As the driver prints them: core_count without a newline (the device
    // plugin breaks on one), the links joined by ", ".
    if (device.core_count_readable) Write(dir / "core_count", absl::StrCat(device.physical_cores));
    Write(dir / "connected_devices",
          absl::StrCat(absl::StrJoin(device.connected_devices, ", "), "\n"));
    Write(dir / "info" / "architecture" / "device_name", device.device_name + "\n");
    Write(dir / "info" / "architecture" / "instance_type", device.instance_type + "\n");
    Write(dir / "info" / "architecture" / "arch_type", "NDv3\n");
    Write(dir / "info" / "serial_number", "00112233445566778899\n");
    // The driver prints each as "%u\n".
    for (const auto& [name, count] :
         {std::pair{"mem_ecc_uncorrected", device.mem_ecc_uncorrected},
          std::pair{"mem_ecc_repairable_uncorrected", device.mem_ecc_repairable_uncorrected},
          std::pair{"sram_ecc_uncorrected", device.sram_ecc_uncorrected}}) {
      if (count) Write(dir / "stats" / "hardware" / name, absl::StrCat(*count, "\n"));
    }
    for (uint32_t core = 0; core < device.physical_cores; ++core) {
      Write(dir / absl::StrCat("neuron_core", core) / "info" / "architecture" / "arch_type",
            "NCv3\n");
    }
    for (const auto& [core, categories] : device.core_memory) {
      const std::filesystem::path memory = dir / absl::StrCat("neuron_core", core) / "stats" /
                                           "memory_usage" / "device_mem";
      for (const auto& [category, bytes] : categories) {
        Write(memory / category / "present", absl::StrCat(bytes, "\n"));
        Write(memory / category / "total", absl::StrCat(2 * bytes, "\n"));
        Write(memory / category / "peak", absl::StrCat(2 * bytes, "\n"));
      }
    }
  }
}

}  // namespace neuron::testing

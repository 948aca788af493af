#include "daemon/hal/nrt/internal/sysfs_attribute.h"

#include <fstream>

#include "absl/strings/ascii.h"

namespace neuron::rtd::hal::nrt::internal {
namespace {

constexpr std::streamsize kMaxAttributeBytes = 4096;

}  // namespace

std::string ReadSysfsAttribute(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::string text(kMaxAttributeBytes, '\0');
  in.read(text.data(), kMaxAttributeBytes);
  text.resize(static_cast<size_t>(in.gcount()));
  return std::string(absl::StripAsciiWhitespace(text));
}

}  // namespace neuron::rtd::hal::nrt::internal

#include "testing/temp_dir.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace neuron::testing {

TempDir::TempDir() {
  char pattern[] = "/tmp/nrtd-test-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::WriteFile(const std::string& name, const std::string& contents) const {
  const std::string file = Join(name);
  std::ofstream(file, std::ios::binary) << contents;
  return file;
}

}  // namespace neuron::testing

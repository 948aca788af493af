// A private temporary directory for one test, removed with everything in it.
#ifndef NEURON_TESTS_TESTING_TEMP_DIR_H_
#define NEURON_TESTS_TESTING_TEMP_DIR_H_

#include <string>

namespace neuron::testing {

class TempDir {
 public:
  // Short paths under /tmp: Unix socket paths hold at most 107 bytes.
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

  // Writes `contents` to a file in the directory; returns its path.
  std::string WriteFile(const std::string& name, const std::string& contents) const;

 private:
  std::string path_;
};

}  // namespace neuron::testing

#endif  // NEURON_TESTS_TESTING_TEMP_DIR_H_

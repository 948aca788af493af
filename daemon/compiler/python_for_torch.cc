#include "daemon/compiler/python_for_torch.h"

#include <filesystem>

namespace neuron::rtd::compiler {

std::vector<std::string> PythonCandidatesForTorch(std::string_view torch_library_dir) {
  // .../<packages>/torch/lib: <packages> is site-packages or dist-packages.
  std::filesystem::path lib = std::filesystem::path(torch_library_dir).lexically_normal();
  if (!lib.has_filename()) lib = lib.parent_path();  // a trailing '/'
  const std::filesystem::path torch = lib.parent_path();
  const std::filesystem::path packages = torch.parent_path();
  const std::string packages_name = packages.filename().string();
  if (torch.filename() != "torch" ||
      (packages_name != "site-packages" && packages_name != "dist-packages")) {
    return {};
  }
  // <prefix>/lib/<python3.X or python3>/<packages>.
  const std::filesystem::path python_lib = packages.parent_path();
  const std::string version = python_lib.filename().string();
  if (!version.starts_with("python3") || python_lib.parent_path().filename() != "lib") return {};
  std::filesystem::path prefix = python_lib.parent_path().parent_path();
  std::vector<std::string> candidates;
  auto add = [&](const std::filesystem::path& bin) {
    if (version != "python3") candidates.push_back((bin / version).string());
    candidates.push_back((bin / "python3").string());
  };
  add(prefix / "bin");
  // Debian's pip installs as root into /usr/local/lib/python3.X/dist-packages,
  // for the interpreter in /usr/bin.
  if (packages_name == "dist-packages" && prefix.filename() == "local") {
    add(prefix.parent_path() / "bin");
  }
  return candidates;
}

}  // namespace neuron::rtd::compiler

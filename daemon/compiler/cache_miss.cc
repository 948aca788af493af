#include "daemon/compiler/cache_miss.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace neuron::rtd::compiler {
namespace {

// Packages of the same graph listed, at most; more are counted.
constexpr size_t kListed = 3;

std::string Short(const std::string& hash) { return hash.substr(0, 12); }

// The parts of `stored` that differ from `key`, as "torch 2.14.0 (here 2.13.0)".
std::vector<std::string> Differences(const CompileKey& key, const CompileKey& stored) {
  std::vector<std::string> differences;
  if (stored.torch_version != key.torch_version) {
    differences.push_back(
        absl::StrFormat("torch %s (here %s)", stored.torch_version, key.torch_version));
  }
  if (stored.compiler_flags != key.compiler_flags) {
    differences.push_back(absl::StrFormat(
        "the compiler's flags \"%s\" (here \"%s\": another version of neuron-rtd)",
        stored.compiler_flags, key.compiler_flags));
  }
  if (stored.cpu != key.cpu) {
    differences.push_back(absl::StrFormat(
        "another CPU (model and features %s, here %s: compiled code is for the CPU it was "
        "built on)",
        Short(stored.cpu), Short(key.cpu)));
  }
  return differences;
}

}  // namespace

std::string ExplainCacheLookup(const CompileKey& key, const std::string& graph_name,
                               std::span<const StoredArtifact> stored) {
  const std::string digest = key.Digest();
  for (const StoredArtifact& artifact : stored) {
    if (artifact.key == digest) {
      return absl::StrFormat("on disk: a package with this graph's key %s is stored",
                             Short(digest));
    }
  }
  std::vector<std::string> same_graph;
  size_t same_name = 0;
  for (const StoredArtifact& artifact : stored) {
    if (artifact.parts.graph == key.graph) {
      if (same_graph.size() < kListed) {
        same_graph.push_back(absl::StrFormat(
            "%s for %s", Short(artifact.key),
            absl::StrJoin(Differences(key, artifact.parts), ", ")));
      }
    } else if (artifact.graph_name == graph_name) {
      ++same_name;
    }
  }
  std::string text = absl::StrFormat("not on disk: no package has this graph's key %s",
                                     Short(digest));
  if (!same_graph.empty()) {
    absl::StrAppend(&text, "; the same graph is stored under other keys: ",
                    absl::StrJoin(same_graph, "; "));
    return text;
  }
  absl::StrAppend(&text, "; no package of this graph (content ", Short(key.graph),
                  ") is stored: it was not compiled with this cache yet, or it was evicted "
                  "([compiler] max_cache_bytes)");
  if (same_name > 0) {
    absl::StrAppend(&text, absl::StrFormat(
                               "; %d package(s) named %s are of another graph (other shapes, "
                               "dtypes or operators)",
                               same_name, graph_name));
  }
  return text;
}

}  // namespace neuron::rtd::compiler

// Why a graph's package is, or is not, in the compiled-graph cache
// (`neuronctl cache why`): the stored packages closest to the graph's key,
// and which part of the key differs. A pure function of the key and the
// cache's listing, tested alone.
#ifndef NEURON_RTD_DAEMON_COMPILER_CACHE_MISS_H_
#define NEURON_RTD_DAEMON_COMPILER_CACHE_MISS_H_

#include <span>
#include <string>

#include "daemon/compiler/artifact_cache.h"
#include "daemon/compiler/compile_key.h"

namespace neuron::rtd::compiler {

// One sentence or a few, for a graph named `graph_name` whose key is `key`,
// given what `stored` holds.
std::string ExplainCacheLookup(const CompileKey& key, const std::string& graph_name,
                               std::span<const StoredArtifact> stored);

}  // namespace neuron::rtd::compiler

#endif  // NEURON_RTD_DAEMON_COMPILER_CACHE_MISS_H_

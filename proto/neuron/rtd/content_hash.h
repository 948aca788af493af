// The content hash that names an executable (LookupExecutable,
// LoadExecutable): XXH3-128 of its serialized body, as 32 lowercase hex
// digits. Daemon and clients compute it alike.
#ifndef NEURON_RTD_CONTENT_HASH_H_
#define NEURON_RTD_CONTENT_HASH_H_

#include <xxhash.h>

#include <cstdio>
#include <string>
#include <string_view>

namespace neuron::rtd {

inline std::string ContentHash(std::string_view body) {
  const XXH128_hash_t hash = XXH3_128bits(body.data(), body.size());
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(hash.high64),
                static_cast<unsigned long long>(hash.low64));
  return std::string(hex, 32);
}

}  // namespace neuron::rtd

#endif  // NEURON_RTD_CONTENT_HASH_H_

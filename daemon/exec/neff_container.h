// Reading the container of a NEFF (Neuron Executable File Format), the
// compiled program libnrt loads: a 1024-byte little-endian header followed by
// a gzip-compressed tar of JSON and binary members. The daemon checks a
// client's NEFF with it before any libnrt call sees the bytes; the fake libnrt
// of the tests reads its test NEFFs with it. Layout: AWS's "work with NEFF
// files" guide (docs/design/nrt-backend.md cites it).
#ifndef NEURON_RTD_DAEMON_EXEC_NEFF_CONTAINER_H_
#define NEURON_RTD_DAEMON_EXEC_NEFF_CONTAINER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace neuron::rtd::exec {

inline constexpr uint64_t kNeffHeaderBytes = 1024;

struct NeffHeader {
  uint64_t package_version = 0;
  uint64_t header_size = 0;
  uint64_t data_size = 0;
  uint64_t version_major = 0;
  uint64_t version_minor = 0;
  std::string build_version;
  uint32_t tpb_count = 0;
  std::string name;
  uint32_t requested_tpb_count = 0;
  uint64_t feature_bits = 0;
  // Physical cores per logical core the NEFF was compiled for (1 or 2); 0 in
  // NEFFs older than the field.
  uint32_t lnc_size = 0;
};

// One regular file of the tar.
struct NeffMember {
  std::string name;
  std::string data;
};

struct NeffContents {
  NeffHeader header;
  std::vector<NeffMember> members;

  // The member called `name`, or null.
  const NeffMember* Find(std::string_view name) const;
};

// What reading a NEFF may cost at most.
struct NeffLimits {
  uint64_t max_unpacked_bytes = 1ull << 30;
  uint32_t max_members = 65536;
};

// The header of `bytes`: INVALID_ARGUMENT naming the field when the bytes
// are shorter than a header, the header's sizes disagree with `bytes`, a
// string field is not terminated or the LNC is neither 0, 1 nor 2.
absl::StatusOr<NeffHeader> ParseNeffHeader(std::string_view bytes);

// The header and every regular file of the payload. INVALID_ARGUMENT for a
// payload that is not a gzip-compressed tar (a bad checksum, a member past
// the end, a name with ".." or a leading "/"), RESOURCE_EXHAUSTED past
// `limits`.
absl::StatusOr<NeffContents> ReadNeff(std::string_view bytes, const NeffLimits& limits = {});

// A NEFF container with `members` (tests and tools: the fake libnrt's test
// NEFFs). Package version 1, the given name and LNC.
std::string WriteNeff(std::string_view name, uint32_t lnc_size,
                      const std::vector<NeffMember>& members);

}  // namespace neuron::rtd::exec

#endif  // NEURON_RTD_DAEMON_EXEC_NEFF_CONTAINER_H_

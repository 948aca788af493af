#include "daemon/exec/neff_container.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace neuron::rtd::exec {
namespace {

// Field offsets of the header, little-endian.
constexpr size_t kPackageVersionAt = 0;
constexpr size_t kHeaderSizeAt = 8;
constexpr size_t kDataSizeAt = 16;
constexpr size_t kVersionMajorAt = 24;
constexpr size_t kVersionMinorAt = 32;
constexpr size_t kBuildVersionAt = 40;
constexpr size_t kBuildVersionBytes = 128;
constexpr size_t kTpbCountAt = 168;
constexpr size_t kNameAt = 220;
constexpr size_t kNameBytes = 256;
constexpr size_t kRequestedTpbCountAt = 476;
constexpr size_t kFeatureBitsAt = 544;
constexpr size_t kLncSizeAt = 552;

constexpr size_t kTarBlock = 512;

template <typename T>
T Load(std::string_view bytes, size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof(T));
  return value;  // the hosts the daemon runs on are little-endian
}

template <typename T>
void Store(std::string& bytes, size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof(T));
}

absl::StatusOr<std::string> TerminatedString(std::string_view bytes, size_t at, size_t length,
                                             std::string_view field) {
  std::string_view region = bytes.substr(at, length);
  const size_t end = region.find('\0');
  if (end == std::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrFormat("NEFF header: %s is not terminated within %d bytes", field, length));
  }
  return std::string(region.substr(0, end));
}

absl::StatusOr<std::string> Gunzip(std::string_view compressed, uint64_t limit) {
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
    return absl::InternalError("zlib: inflateInit2 failed");
  }
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  int result = Z_OK;
  while (result != Z_STREAM_END) {
    const size_t have = out.size();
    const size_t grow = std::max<size_t>(1 << 16, have);
    if (have >= limit) {
      inflateEnd(&stream);
      return absl::ResourceExhaustedError(
          absl::StrFormat("NEFF payload unpacks to more than %d bytes", limit));
    }
    out.resize(std::min<uint64_t>(have + grow, limit));
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + have);
    stream.avail_out = static_cast<uInt>(out.size() - have);
    result = inflate(&stream, Z_NO_FLUSH);
    out.resize(out.size() - stream.avail_out);
    if (result == Z_STREAM_END) break;
    if (result != Z_OK || (stream.avail_in == 0 && stream.avail_out != 0)) {
      inflateEnd(&stream);
      return absl::InvalidArgumentError(
          absl::StrFormat("NEFF payload is not valid gzip data (zlib: %s)",
                          stream.msg != nullptr ? stream.msg : "truncated"));
    }
  }
  if (stream.avail_in != 0) {
    inflateEnd(&stream);
    return absl::InvalidArgumentError("NEFF payload has bytes after its gzip stream");
  }
  inflateEnd(&stream);
  return out;
}

std::string Gzip(std::string_view data) {
  z_stream stream{};
  deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

absl::StatusOr<uint64_t> Octal(std::string_view field, std::string_view what) {
  uint64_t value = 0;
  bool digits = false;
  for (char c : field) {
    if (c == '\0' || c == ' ') {
      if (digits) break;
      continue;
    }
    if (c < '0' || c > '7' || value > (UINT64_MAX >> 3)) {
      return absl::InvalidArgumentError(absl::StrFormat("NEFF tar: bad %s field", what));
    }
    value = value * 8 + static_cast<uint64_t>(c - '0');
    digits = true;
  }
  return value;
}

bool AllZero(std::string_view block) {
  return std::all_of(block.begin(), block.end(), [](char c) { return c == '\0'; });
}

absl::Status CheckMemberName(absl::string_view name) {
  if (name.empty() || name.front() == '/' || name.size() > 4096) {
    return absl::InvalidArgumentError(absl::StrFormat("NEFF tar: bad member name \"%s\"",
                                                      absl::CEscape(name.substr(0, 100))));
  }
  for (absl::string_view part : absl::StrSplit(name, '/')) {
    if (part == "..") {
      return absl::InvalidArgumentError(
          absl::StrFormat("NEFF tar: member name \"%s\" leaves the archive", name));
    }
  }
  return absl::OkStatus();
}

// The "path" record of a pax extended header, if any.
std::string PaxPath(absl::string_view records) {
  std::string path;
  while (!records.empty()) {
    const size_t space = records.find(' ');
    uint64_t length = 0;
    if (space == std::string_view::npos ||
        !absl::SimpleAtoi(records.substr(0, space), &length) || length > records.size() ||
        length <= space + 1) {
      break;
    }
    absl::string_view record = records.substr(space + 1, length - space - 2);
    if (absl::StartsWith(record, "path=")) path = std::string(record.substr(5));
    records.remove_prefix(length);
  }
  return path;
}

absl::StatusOr<std::vector<NeffMember>> ReadTar(std::string_view tar, const NeffLimits& limits) {
  std::vector<NeffMember> members;
  std::string long_name;
  size_t at = 0;
  while (true) {
    if (at + kTarBlock > tar.size()) {
      return absl::InvalidArgumentError("NEFF tar: ends without its end-of-archive blocks");
    }
    std::string_view block = tar.substr(at, kTarBlock);
    if (AllZero(block)) break;
    uint64_t sum = 0;
    for (size_t i = 0; i < kTarBlock; ++i) {
      sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(block[i]);
    }
    absl::StatusOr<uint64_t> checksum = Octal(block.substr(148, 8), "checksum");
    if (!checksum.ok()) return checksum.status();
    if (*checksum != sum) {
      return absl::InvalidArgumentError(
          absl::StrFormat("NEFF tar: header at offset %d has a bad checksum", at));
    }
    absl::StatusOr<uint64_t> size = Octal(block.substr(124, 12), "size");
    if (!size.ok()) return size.status();
    const uint64_t data_at = at + kTarBlock;
    if (*size > tar.size() - data_at) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "NEFF tar: member at offset %d claims %d bytes past the archive's end", at, *size));
    }
    std::string_view data = tar.substr(data_at, *size);
    const char type = block[156];
    std::string name(block.substr(0, 100).substr(0, block.substr(0, 100).find('\0')));
    if (block.substr(257, 5) == "ustar") {
      std::string_view prefix = block.substr(345, 155);
      prefix = prefix.substr(0, prefix.find('\0'));
      if (!prefix.empty()) name = std::string(prefix) + "/" + name;
    }
    if (!long_name.empty()) name = std::exchange(long_name, "");
    if (type == 'x') {
      long_name = PaxPath(absl::string_view(data.data(), data.size()));
    } else if (type == 'L') {
      long_name = std::string(data.substr(0, data.find('\0')));
    } else if (type == '0' || type == '\0') {
      if (absl::Status named = CheckMemberName(name); !named.ok()) return named;
      if (members.size() >= limits.max_members) {
        return absl::ResourceExhaustedError(
            absl::StrFormat("NEFF tar: more than %d members", limits.max_members));
      }
      members.push_back(NeffMember{.name = std::move(name), .data = std::string(data)});
    } else if (type != '5' && type != 'g') {
      return absl::InvalidArgumentError(absl::StrFormat(
          "NEFF tar: member \"%s\" is of type '%c'; a NEFF holds files and directories", name,
          type));
    }
    at = data_at + (*size + kTarBlock - 1) / kTarBlock * kTarBlock;
  }
  return members;
}

void AppendTarMember(std::string& tar, const NeffMember& member) {
  std::string block(kTarBlock, '\0');
  std::memcpy(block.data(), member.name.data(), std::min<size_t>(member.name.size(), 99));
  std::memcpy(block.data() + 100, "0000644", 7);
  std::memcpy(block.data() + 108, "0000000", 7);
  std::memcpy(block.data() + 116, "0000000", 7);
  const std::string size = absl::StrFormat("%011o", member.data.size());
  std::memcpy(block.data() + 124, size.data(), 11);
  std::memcpy(block.data() + 136, "00000000000", 11);
  block[156] = '0';
  std::memcpy(block.data() + 257, "ustar\0" "00", 8);
  std::memset(block.data() + 148, ' ', 8);
  uint64_t sum = 0;
  for (char c : block) sum += static_cast<unsigned char>(c);
  const std::string checksum = absl::StrFormat("%06o", sum);
  std::memcpy(block.data() + 148, checksum.data(), 6);
  block[154] = '\0';
  tar += block;
  tar += member.data;
  tar.append((kTarBlock - member.data.size() % kTarBlock) % kTarBlock, '\0');
}

}  // namespace

const NeffMember* NeffContents::Find(std::string_view name) const {
  for (const NeffMember& member : members) {
    if (member.name == name || member.name == "./" + std::string(name)) return &member;
  }
  return nullptr;
}

absl::StatusOr<NeffHeader> ParseNeffHeader(std::string_view bytes) {
  if (bytes.size() < kNeffHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a NEFF starts with a %d-byte header; these are %d bytes", kNeffHeaderBytes,
        bytes.size()));
  }
  NeffHeader header;
  header.package_version = Load<uint64_t>(bytes, kPackageVersionAt);
  header.header_size = Load<uint64_t>(bytes, kHeaderSizeAt);
  header.data_size = Load<uint64_t>(bytes, kDataSizeAt);
  header.version_major = Load<uint64_t>(bytes, kVersionMajorAt);
  header.version_minor = Load<uint64_t>(bytes, kVersionMinorAt);
  header.tpb_count = Load<uint32_t>(bytes, kTpbCountAt);
  header.requested_tpb_count = Load<uint32_t>(bytes, kRequestedTpbCountAt);
  header.feature_bits = Load<uint64_t>(bytes, kFeatureBitsAt);
  header.lnc_size = Load<uint32_t>(bytes, kLncSizeAt);
  if (header.header_size != kNeffHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "NEFF header: header_size is %d; a NEFF's header is %d bytes", header.header_size,
        kNeffHeaderBytes));
  }
  if (header.data_size != bytes.size() - kNeffHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "NEFF header: data_size is %d, but %d bytes follow the header", header.data_size,
        bytes.size() - kNeffHeaderBytes));
  }
  if (header.lnc_size > 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "NEFF header: lnc_size is %d; a logical core is 1 or 2 physical cores",
        header.lnc_size));
  }
  absl::StatusOr<std::string> build =
      TerminatedString(bytes, kBuildVersionAt, kBuildVersionBytes, "neff_build_version");
  if (!build.ok()) return build.status();
  header.build_version = *std::move(build);
  absl::StatusOr<std::string> name = TerminatedString(bytes, kNameAt, kNameBytes, "name");
  if (!name.ok()) return name.status();
  header.name = *std::move(name);
  return header;
}

absl::StatusOr<NeffContents> ReadNeff(std::string_view bytes, const NeffLimits& limits) {
  absl::StatusOr<NeffHeader> header = ParseNeffHeader(bytes);
  if (!header.ok()) return header.status();
  absl::StatusOr<std::string> tar = Gunzip(bytes.substr(kNeffHeaderBytes), limits.max_unpacked_bytes);
  if (!tar.ok()) return tar.status();
  absl::StatusOr<std::vector<NeffMember>> members = ReadTar(*tar, limits);
  if (!members.ok()) return members.status();
  return NeffContents{.header = *std::move(header), .members = *std::move(members)};
}

std::string WriteNeff(std::string_view name, uint32_t lnc_size,
                      const std::vector<NeffMember>& members) {
  std::string tar;
  for (const NeffMember& member : members) AppendTarMember(tar, member);
  tar.append(2 * kTarBlock, '\0');
  const std::string payload = Gzip(tar);
  std::string bytes(kNeffHeaderBytes, '\0');
  Store<uint64_t>(bytes, kPackageVersionAt, 1);
  Store<uint64_t>(bytes, kHeaderSizeAt, kNeffHeaderBytes);
  Store<uint64_t>(bytes, kDataSizeAt, payload.size());
  Store<uint64_t>(bytes, kVersionMajorAt, 2);
  Store<uint64_t>(bytes, kVersionMinorAt, 0);
  std::memcpy(bytes.data() + kBuildVersionAt, "neuron-rtd-test", 15);
  Store<uint32_t>(bytes, kTpbCountAt, 1);
  std::memcpy(bytes.data() + kNameAt, name.data(), std::min<size_t>(name.size(), kNameBytes - 1));
  Store<uint32_t>(bytes, kRequestedTpbCountAt, 1);
  Store<uint32_t>(bytes, kLncSizeAt, lnc_size);
  return bytes + payload;
}

}  // namespace neuron::rtd::exec

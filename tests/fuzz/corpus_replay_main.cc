// Drives a libFuzzer target without libFuzzer, from a seed corpus: each file
// of the directories (or files) named on the command line is run, then
// mutations of it made with a fixed seed (bit flips, truncations, byte
// insertions, splices of two seeds), so that CTest exercises the target the
// same way on every build. --mutations=N sets the mutations per seed.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

constexpr int kDefaultMutationsPerSeed = 20000;

std::vector<uint8_t> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::vector<uint8_t> Mutate(const std::vector<uint8_t>& seed, const std::vector<uint8_t>& other,
                            std::mt19937_64& random) {
  std::vector<uint8_t> bytes = seed;
  const int edits = 1 + static_cast<int>(random() % 4);
  for (int edit = 0; edit < edits; ++edit) {
    switch (random() % 5) {
      case 0:
        if (!bytes.empty()) bytes[random() % bytes.size()] ^= static_cast<uint8_t>(1u << (random() % 8));
        break;
      case 1:
        if (!bytes.empty()) bytes[random() % bytes.size()] = static_cast<uint8_t>(random());
        break;
      case 2:
        if (!bytes.empty()) bytes.resize(random() % bytes.size());
        break;
      case 3:
        bytes.insert(bytes.begin() + static_cast<long>(random() % (bytes.size() + 1)),
                     static_cast<uint8_t>(random()));
        break;
      default:
        if (!other.empty()) {
          const size_t from = random() % other.size();
          bytes.insert(bytes.begin() + static_cast<long>(random() % (bytes.size() + 1)),
                       other.begin() + static_cast<long>(from), other.end());
        }
        break;
    }
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::vector<uint8_t>> seeds;
  int mutations_per_seed = kDefaultMutationsPerSeed;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument.starts_with("--mutations=")) {
      mutations_per_seed = std::stoi(argument.substr(12));
      continue;
    }
    const std::filesystem::path path(argument);
    if (std::filesystem::is_directory(path)) {
      for (const auto& entry : std::filesystem::directory_iterator(path)) {
        if (entry.is_regular_file()) seeds.push_back(ReadFile(entry.path()));
      }
    } else {
      seeds.push_back(ReadFile(path));
    }
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "usage: %s [--mutations=N] CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  std::mt19937_64 random(20261201);
  size_t runs = 0;
  for (size_t i = 0; i < seeds.size(); ++i) {
    LLVMFuzzerTestOneInput(seeds[i].data(), seeds[i].size());
    ++runs;
    for (int m = 0; m < mutations_per_seed; ++m) {
      const std::vector<uint8_t> input = Mutate(seeds[i], seeds[random() % seeds.size()], random);
      LLVMFuzzerTestOneInput(input.data(), input.size());
      ++runs;
    }
  }
  std::printf("%zu inputs from %zu seeds: no crash\n", runs, seeds.size());
  return 0;
}

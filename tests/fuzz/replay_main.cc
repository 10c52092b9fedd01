// Replays inputs through the fuzz targets without libFuzzer: `fuzz_replay TARGET PATH...` runs
// each file (each file of each directory, in name order) through TARGET once. ctest runs every
// target over its seed corpus and over every input that ever crashed it (tests/fuzz/crashes), so
// a fixed bug stays fixed in every build, sanitizers or not.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#define AUTODIST_DECLARE_FUZZ_TARGET(name) \
  extern "C" int AutodistFuzz_##name(const uint8_t* data, size_t size);
#include "fuzz_targets.inc"
#undef AUTODIST_DECLARE_FUZZ_TARGET

namespace {

using Target = int (*)(const uint8_t*, size_t);

const std::map<std::string, Target>& Targets() {
#define AUTODIST_DECLARE_FUZZ_TARGET(name) {#name, &AutodistFuzz_##name},
  static const std::map<std::string, Target> targets = {
#include "fuzz_targets.inc"
  };
#undef AUTODIST_DECLARE_FUZZ_TARGET
  return targets;
}

std::vector<std::filesystem::path> InputsUnder(const std::filesystem::path& path) {
  std::vector<std::filesystem::path> inputs;
  if (std::filesystem::is_directory(path)) {
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      if (entry.is_regular_file() && entry.path().filename().string()[0] != '.') {
        inputs.push_back(entry.path());
      }
    }
  } else if (std::filesystem::exists(path)) {
    inputs.push_back(path);
  }
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || !Targets().contains(argv[1])) {
    std::fprintf(stderr, "usage: fuzz_replay TARGET PATH...; targets:");
    for (const auto& [name, target] : Targets()) std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  const Target target = Targets().at(argv[1]);
  int replayed = 0;
  for (int i = 2; i < argc; ++i) {
    for (const std::filesystem::path& input : InputsUnder(argv[i])) {
      std::ifstream file(input, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(file)),
                              std::istreambuf_iterator<char>());
      std::fprintf(stderr, "%s: %s (%zu bytes)\n", argv[1], input.c_str(), bytes.size());
      target(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  }
  std::printf("%s: replayed %d inputs\n", argv[1], replayed);
  return replayed > 0 ? 0 : 1;
}

#include "runtime/exec/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <utility>

#include "runtime/common/durable_file.h"
#include "runtime/common/error.h"

namespace autodist::exec {
namespace {

namespace fs = std::filesystem;

// checkpoint-<step>.ckpt, or .pb from earlier releases; a `.tmp` suffix marks an unfinished write.
const std::regex kName(R"(checkpoint-(\d+)\.(ckpt|pb))");
const std::regex kUnfinished(R"(checkpoint-\d+\.(ckpt|pb)\.tmp)");

std::vector<std::pair<int64_t, std::string>> StepsAndPaths(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return found;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, match, kName)) continue;
    found.emplace_back(std::stoll(match[1].str()), entry.path().string());
  }
  // Newest first; of two files of the same step (both formats), this release's first.
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return a.second < b.second;  // ".ckpt" < ".pb"
  });
  return found;
}

void RemoveUnfinished(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, kUnfinished)) fs::remove(entry.path(), ec);
  }
}

}  // namespace

std::string WriteCheckpoint(const std::string& dir, const CheckpointContents& contents, int keep) {
  AD_CHECK(keep >= 0, kInvalidArgument, "checkpoint keep is {}; expected 0 (keep all) or more",
           keep);
  std::error_code ec;
  fs::create_directories(dir, ec);
  AD_CHECK(!ec, kInvalidArgument, "cannot create checkpoint directory '{}': {}", dir, ec.message());
  // Only the chief writes here, so a temporary file is an earlier write that a crash cut short.
  RemoveUnfinished(dir);
  std::string path = fmt::format("{}/checkpoint-{}.ckpt", dir, contents.meta.step);
  WriteCheckpointFile(path, contents);
  if (keep > 0) {
    const auto found = StepsAndPaths(dir);
    bool removed = false;
    for (auto i = static_cast<size_t>(keep); i < found.size(); ++i) {
      if (found[i].second == path) continue;  // older steps of another run may sort above it
      fs::remove(found[i].second, ec);
      removed = true;
    }
    if (removed) SyncDirectory(dir);
  }
  return path;
}

std::vector<std::string> ListCheckpoints(const std::string& dir) {
  std::vector<std::string> paths;
  for (auto& [step, path] : StepsAndPaths(dir)) paths.push_back(std::move(path));
  return paths;
}

std::optional<std::string> LatestCheckpoint(const std::string& dir) {
  const std::vector<std::string> paths = ListCheckpoints(dir);
  if (paths.empty()) return std::nullopt;
  return paths.front();
}

}  // namespace autodist::exec

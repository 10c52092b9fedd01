#include "runtime/checkpoint/checkpoint_dir.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <utility>

#include "runtime/common/durable_file.h"
#include "runtime/common/error.h"

namespace autodist::checkpoint {
namespace {

namespace fs = std::filesystem;

// checkpoint-<step>.ckpt, or .pb from earlier releases; shard files add .ps-<index>; a `.tmp`
// suffix marks an unfinished write.
const std::regex kName(R"(checkpoint-(\d+)\.(ckpt|pb))");
const std::regex kShardFile(R"((checkpoint-\d+\.ckpt)\.ps-\d+)");
const std::regex kUnfinished(R"(checkpoint-\d+\.(ckpt|pb)(\.ps-\d+)?\.tmp)");

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

// Removes temporaries, and shard files whose checkpoint was never written, except those of
// `writing` (the checkpoint being written now, whose shards are already there).
void RemoveUnfinished(const std::string& dir, const std::string& writing) {
  const std::string writing_name = fs::path(writing).filename().string();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch match;
    const bool orphan_shard = std::regex_match(name, match, kShardFile) &&
                              match[1].str() != writing_name &&
                              !fs::exists(fs::path(dir) / match[1].str(), ec);
    if (orphan_shard || std::regex_match(name, kUnfinished)) fs::remove(entry.path(), ec);
  }
}

// Removes checkpoint `path` and its shard files.
void RemoveCheckpoint(const std::string& path) {
  const std::string prefix = fs::path(path).filename().string() + ".ps-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(path).parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) fs::remove(entry.path(), ec);
  }
  fs::remove(path, ec);
}

}  // namespace

std::string CheckpointPath(const std::string& dir, int64_t step) {
  return (fs::path(dir) / fmt::format("checkpoint-{}.ckpt", step)).string();
}

void CreateCheckpointDirectory(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  AD_CHECK(!ec, kInvalidArgument, "cannot create checkpoint directory '{}': {}", dir, ec.message());
}

std::string ShardFilePath(const std::string& checkpoint_path, int index) {
  return fmt::format("{}.ps-{}", checkpoint_path, index);
}

std::string WriteCheckpoint(const std::string& dir, const CheckpointContents& contents, int keep) {
  AD_CHECK(keep >= 0, kInvalidArgument, "checkpoint keep is {}; expected 0 (keep all) or more",
           keep);
  CreateCheckpointDirectory(dir);
  std::string path = CheckpointPath(dir, contents.meta.step);
  // Only the chief (and, for their shards, the parameter servers it asks) writes here, so a
  // temporary file is an earlier write that a crash cut short.
  RemoveUnfinished(dir, path);
  WriteCheckpointFile(path, contents);
  if (keep > 0) {
    const auto found = StepsAndPaths(dir);
    bool removed = false;
    for (auto i = static_cast<size_t>(keep); i < found.size(); ++i) {
      if (found[i].second == path) continue;  // older steps of another run may sort above it
      RemoveCheckpoint(found[i].second);
      removed = true;
    }
    if (removed) SyncDirectory(dir);
  }
  return path;
}

int RemoveCheckpoints(const std::string& dir) {
  const auto found = StepsAndPaths(dir);
  if (found.empty()) return 0;
  for (const auto& [step, path] : found) RemoveCheckpoint(path);
  RemoveUnfinished(dir, "");
  const auto left = StepsAndPaths(dir);
  AD_CHECK(left.empty(), kFailedPrecondition,
           "cannot delete checkpoint '{}' (to start over); check the directory's permissions",
           left.empty() ? "" : left.front().second);
  SyncDirectory(dir);
  return static_cast<int>(found.size());
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

}  // namespace autodist::checkpoint

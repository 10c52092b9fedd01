// `autodist timeline DIR`: merges the members' timeline files that a job left in a directory
// (spec.training.timeline.path, on a cluster a volume) into one trace, as `autodist run` does
// itself at the end of a local run.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "launcher/commands.h"
#include "runtime/common/error.h"
#include "runtime/observe/timeline_merge.h"

namespace autodist::cli {
namespace {

namespace fs = std::filesystem;

// Members in a job's order: workers by index, then parameter servers by index, then any other
// name alphabetically (the order autodist run merges in).
std::tuple<int, long long, std::string> MemberOrder(const std::string& member) {
  for (const auto& [rank, prefix] : {std::pair<int, std::string>{0, "worker-"}, {1, "ps-"}}) {
    const std::string index = member.substr(std::min(prefix.size(), member.size()));
    if (member.starts_with(prefix) && !index.empty() && index.size() < 10 &&
        std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return {rank, std::stoll(index), ""};
    }
  }
  return {2, 0, member};
}

}  // namespace

int RunTimelineMerge(const TimelineMergeOptions& options, std::ostream& out) {
  AD_CHECK(fs::is_directory(options.directory), kNotFound,
           "timeline directory '{}' does not exist (give the directory of "
           "spec.training.timeline.path, or a copy of it)",
           options.directory);
  const std::string output =
      options.output.empty() ? (fs::path(options.directory) / observe::kMergedTimelineName).string()
                             : options.output;
  std::vector<observe::TimelineSource> sources;
  for (const auto& entry : fs::directory_iterator(options.directory)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || !name.ends_with(observe::kTimelineSuffix) ||
        name.size() == observe::kTimelineSuffix.size()) {
      continue;
    }
    std::error_code ignored;
    if (fs::equivalent(entry.path(), output, ignored)) continue;
    sources.push_back(
        {name.substr(0, name.size() - observe::kTimelineSuffix.size()), entry.path().string()});
  }
  AD_CHECK(!sources.empty(), kNotFound,
           "timeline directory '{}' holds no member timelines (<member>{} files)",
           options.directory, observe::kTimelineSuffix);
  std::sort(sources.begin(), sources.end(), [](const auto& a, const auto& b) {
    return MemberOrder(a.member) < MemberOrder(b.member);
  });
  const int merged = observe::MergeTimelines(sources, output);
  std::string members;
  for (const observe::TimelineSource& source : sources) {
    members += (members.empty() ? "" : ", ") + source.member;
  }
  out << fmt::format("timeline: {} ({} members: {}; open it in Perfetto)", output, merged, members)
      << std::endl;
  return merged;
}

}  // namespace autodist::cli

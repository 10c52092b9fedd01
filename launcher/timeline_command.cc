// `autodist timeline DIR`: merges the members' timeline files that a job left in a directory
// (spec.training.timeline.path, on a cluster a volume) into one trace, as `autodist run` does
// itself at the end of a local run.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "launcher/commands.h"
#include "launcher/member_order.h"
#include "runtime/common/error.h"
#include "runtime/observe/timeline_merge.h"

namespace autodist::cli {

namespace fs = std::filesystem;

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
    return launcher::MemberOrderKey(a.member) < launcher::MemberOrderKey(b.member);
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

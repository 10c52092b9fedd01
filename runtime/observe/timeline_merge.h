// One trace of a job's timelines: each member's file (timeline.h) becomes a process of its own,
// named after the member, in the members' order, so Perfetto shows a track per member on one
// time axis (the files carry wall-clock times).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace autodist::observe {

// A job's timeline files in a directory: <member>.timeline.json each, and the merged trace.
inline constexpr std::string_view kTimelineSuffix = ".timeline.json";
inline constexpr std::string_view kMergedTimelineName = "job.trace.json";

struct TimelineSource {
  std::string member;  // "worker-0"
  std::string path;    // its timeline file
};

// Writes the merged trace to `out_path` (Chrome's JSON object form, {"traceEvents": [...]}) and
// returns how many files went in. A missing file is skipped (a member that never started); a file
// that a dead process left without its closing bracket, or with half an event at its end, keeps
// its whole events. Throws InvalidArgument naming the file for anything else that is not a
// timeline, and naming `out_path` when it cannot be written.
int MergeTimelines(const std::vector<TimelineSource>& sources, const std::string& out_path);

}  // namespace autodist::observe

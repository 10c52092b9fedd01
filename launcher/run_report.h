// The report `autodist run` leaves in a job's log folder (report.html): one self-contained page
// (inline CSS and SVG, no script, nothing fetched) with the compiled strategy, the loss, accuracy
// and throughput curves, each member's step time split into its parts, and the bytes on the
// wire. Built from what the run leaves anyway: the workers' TensorBoard event files and every
// member's result file. docs/observability.md shows one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/job/member_result.h"

namespace autodist::launcher {

// A worker's scalars by tag, (step, value) in step order.
using ScalarSeries = std::map<std::string, std::vector<std::pair<int64_t, double>>>;

struct ReportMember {
  std::string node;  // "worker-0", "ps-0"
  bool worker = true;
  std::optional<job::MemberResult> result;  // none when the member left no result (it failed)
  ScalarSeries scalars;                     // a worker's event file; empty for a server
};

struct RunReport {
  std::string job_name;
  std::string outcome;  // "succeeded", or "failed: <why>", "interrupted"
  // How it ended: true, false, or unknown (a report from a cluster job's files, which do not
  // say; `kubectl get adj` does).
  std::optional<bool> succeeded;
  std::optional<double> wall_seconds;  // unknown from files
  // The compiled strategy's summary when no chief's result carries it (the job's ConfigMap's
  // summary.txt on a cluster).
  std::string strategy_summary;
  std::string generated_at;           // UTC, ISO 8601
  std::vector<ReportMember> members;  // workers by index, then parameter servers
  // With a recorded timeline: the merged trace's file and a few of its steps drawn
  // (timeline_view.h); empty without one.
  std::string timeline_file;
  std::string timeline_svg;
};

// The scalars of the event files in `dir` that are not in `earlier` (files of former runs), in
// file order; later points of a step replace earlier ones.
ScalarSeries ReadNewScalars(const std::string& dir, const std::vector<std::string>& earlier);

// The page, as one HTML document.
std::string RenderRunReport(const RunReport& report);

// Now, in UTC, ISO 8601 (RunReport::generated_at).
std::string UtcNow();

// Adds a job's merged trace (timeline_merge.h) to `report`: its file, and a few of its steps
// drawn (timeline_view.h). Throws InvalidArgument naming the file when it is not a trace.
void AttachTimeline(RunReport& report, const std::string& merged_trace);

}  // namespace autodist::launcher

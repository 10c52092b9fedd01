// `autodist report`: the page `autodist run` writes at the end of a local run, built afterwards
// from the files a job left on its volumes (a cluster job's spec.training.tensorboard.path and
// spec.training.timeline.path) and the strategy summary of its ConfigMap.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "launcher/commands.h"
#include "launcher/member_order.h"
#include "launcher/run_report.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/observe/event_file.h"
#include "runtime/observe/timeline_merge.h"

namespace autodist::cli {

namespace fs = std::filesystem;

void RunReportFromFiles(const ReportOptions& options, std::ostream& out) {
  AD_CHECK(fs::is_directory(options.tensorboard), kNotFound,
           "--tensorboard: directory '{}' does not exist (give the job's "
           "spec.training.tensorboard.path, or a copy of it)",
           options.tensorboard);
  launcher::RunReport report;
  report.job_name = !options.name.empty()
                        ? options.name
                        : fs::absolute(options.tensorboard).lexically_normal().filename().string();
  if (report.job_name.empty()) report.job_name = "job";
  report.outcome = "recorded";
  report.generated_at = launcher::UtcNow();
  std::vector<std::string> workers;
  for (const auto& entry : fs::directory_iterator(options.tensorboard)) {
    if (!entry.is_directory() || observe::EventFilesIn(entry.path().string()).empty()) continue;
    workers.push_back(entry.path().filename().string());
  }
  AD_CHECK(!workers.empty(), kNotFound,
           "--tensorboard: directory '{}' holds no worker's event files (<worker>/"
           "events.out.tfevents.*)",
           options.tensorboard);
  std::sort(workers.begin(), workers.end(), [](const std::string& a, const std::string& b) {
    return launcher::MemberOrderKey(a) < launcher::MemberOrderKey(b);
  });
  for (const std::string& worker : workers) {
    launcher::ReportMember member;
    member.node = worker;
    member.scalars =
        launcher::ReadNewScalars((fs::path(options.tensorboard) / worker).string(), {});
    report.members.push_back(std::move(member));
  }
  if (!options.summary.empty()) {
    report.strategy_summary = ReadFileBytes(options.summary, "--summary");
  }
  if (!options.timeline.empty()) {
    const std::string merged =
        (fs::path(options.timeline) / std::string(observe::kMergedTimelineName)).string();
    RunTimelineMerge({options.timeline, merged}, out);
    launcher::AttachTimeline(report, merged);
  }
  WriteFileBytes(options.output, launcher::RenderRunReport(report));
  out << "report: " << options.output << std::endl;
}

}  // namespace autodist::cli

#include "launcher/run_report.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <nlohmann/json.hpp>
#include <tuple>

#include "launcher/svg_chart.h"
#include "launcher/timeline_view.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/observe/event_file.h"
#include "runtime/strategy/summary.h"

namespace autodist::launcher {
namespace {

// One color per worker (and a few more), readable on white.
constexpr std::array<const char*, 8> kPalette = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                                 "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};
// The parts of a step in the breakdown, with their colors.
constexpr const char* kDataColor = "#9ecae1";
constexpr const char* kComputeColor = "#3182bd";
constexpr const char* kSyncColor = "#e6550d";
constexpr const char* kOtherColor = "#bdbdbd";

const char* ColorOf(size_t index) { return kPalette.at(index % kPalette.size()); }

// The legend of the step-time bars: a swatch of each part's color before its name.
std::string Swatch(const char* color, const char* label) {
  return fmt::format(R"(<span class="swatch" style="background:{}"></span>{})", color, label);
}

constexpr const char* kStyle = R"(
body { font-family: system-ui, sans-serif; margin: 2em auto; padding: 0 1.5em; max-width: 1000px;
       color: #222; }
h1 { margin-bottom: 0.2em; }
.outcome { font-size: 1.1em; padding: 0.4em 0.8em; border-radius: 4px; display: inline-block; }
.outcome.ok { background: #e5f5e0; }
.outcome.failed { background: #fde0dd; }
.outcome.unknown { background: #eeeeee; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; }
table { border-collapse: collapse; margin: 0.8em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3em 0.8em; text-align: right; }
th:first-child, td:first-child, th.text, td.text { text-align: left; }
svg.chart { display: block; margin: 0.8em 0; }
svg .title { font-weight: bold; font-size: 13px; }
svg .grid line { stroke: #e4e4e4; }
svg text { font-size: 11px; fill: #333; }
svg .tick.y { text-anchor: end; }
svg .tick.x, svg .axis { text-anchor: middle; }
svg .empty { fill: #888; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; margin-right: 0.3em; }
footer { margin-top: 2em; color: #777; font-size: 0.9em; }
)";

std::vector<std::pair<double, double>> Points(const ScalarSeries& scalars, const std::string& tag) {
  std::vector<std::pair<double, double>> points;
  const auto found = scalars.find(tag);
  if (found == scalars.end()) return points;
  for (const auto& [step, value] : found->second) points.emplace_back(double(step), value);
  return points;
}

const ReportMember* Chief(const RunReport& report) {
  for (const ReportMember& member : report.members) {
    if (member.worker) return &member;
  }
  return nullptr;
}

// The mean of a tag's values over a worker's logged windows; 0 without any.
double Mean(const ScalarSeries& scalars, const std::string& tag) {
  const auto found = scalars.find(tag);
  if (found == scalars.end() || found->second.empty()) return 0;
  double sum = 0;
  for (const auto& [step, value] : found->second) sum += value;
  return sum / static_cast<double>(found->second.size());
}

std::string Seconds(double seconds) {
  return seconds >= 1 ? fmt::format("{:.2f} s", seconds) : fmt::format("{:.2f} ms", seconds * 1e3);
}

std::string StrategySection(const RunReport& report) {
  const ReportMember* chief = Chief(report);
  const std::string& summary =
      chief != nullptr && chief->result && !chief->result->strategy_summary.empty()
          ? chief->result->strategy_summary
          : report.strategy_summary;
  return fmt::format("<section id=\"strategy\">\n<h2>Strategy</h2>\n{}</section>\n",
                     !summary.empty() ? "<pre>" + EscapeHtml(summary) + "</pre>\n"
                                      : "<p>The chief left no result, so the compiled strategy is "
                                        "not known here; its log has it.</p>\n");
}

std::string TrainingSection(const RunReport& report) {
  const ReportMember* chief = Chief(report);
  const ScalarSeries none;
  const ScalarSeries& scalars = chief != nullptr ? chief->scalars : none;
  std::string html = "<section id=\"training\">\n<h2>Training</h2>\n";
  LineChartSpec loss{"loss-chart", "Loss", "step", "loss", {}};
  loss.series.push_back({"train loss", ColorOf(0), Points(scalars, "train/loss")});
  if (scalars.contains("eval/loss")) {
    loss.series.push_back({"eval loss", ColorOf(1), Points(scalars, "eval/loss")});
  }
  html += LineChart(loss) + "\n";
  if (scalars.contains("eval/accuracy")) {
    LineChartSpec accuracy{"accuracy-chart", "Accuracy (evaluation)", "step", "accuracy", {}};
    accuracy.series.push_back({"accuracy", ColorOf(2), Points(scalars, "eval/accuracy")});
    html += LineChart(accuracy) + "\n";
  }
  LineChartSpec throughput{"throughput-chart", "Throughput", "step", "samples/s", {}};
  throughput.y_from_zero = true;
  size_t index = 0;
  for (const ReportMember& member : report.members) {
    if (!member.worker) continue;
    throughput.series.push_back(
        {member.node, ColorOf(index++), Points(member.scalars, "perf/samples_per_second")});
  }
  html += LineChart(throughput) + "\n</section>\n";
  return html;
}

std::string StepTimeSection(const RunReport& report) {
  struct Row {
    const ReportMember* member;
    double step, data, compute, sync, other;
  };
  std::vector<Row> rows;
  double longest = 0;
  for (const ReportMember& member : report.members) {
    if (!member.worker) continue;
    Row row{&member,
            Mean(member.scalars, "perf/step_seconds"),
            Mean(member.scalars, "perf/data_wait_seconds"),
            Mean(member.scalars, "perf/compute_seconds"),
            Mean(member.scalars, "perf/synchronize_seconds"),
            0};
    row.other = std::max(0.0, row.step - row.data - row.compute - row.sync);
    longest = std::max(longest, row.step);
    rows.push_back(row);
  }
  std::string html = fmt::format(
      "<section id=\"step-time\">\n<h2>Step time by member</h2>\n<p>Means per step over the "
      "logged windows. {} {} {} {}</p>\n",
      Swatch(kDataColor, "data wait"), Swatch(kComputeColor, "forward and backward"),
      Swatch(kSyncColor, "synchronize (pushes, pulls, all-reduce, optimizer)"),
      Swatch(kOtherColor, "the rest"));
  constexpr int kLabel = 90;
  constexpr int kBar = 520;
  constexpr int kRowHeight = 26;
  html += fmt::format(
      "<svg id=\"step-time-chart\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"Step time "
      "by member\">\n",
      kLabel + kBar + 120, kRowHeight * std::max<size_t>(rows.size(), 1) + 8);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    const int y = static_cast<int>(i) * kRowHeight + 4;
    html += fmt::format("<text x=\"0\" y=\"{}\">{}</text>\n", y + 15, EscapeHtml(row.member->node));
    double x = kLabel;
    for (const auto& [part, seconds, color] :
         {std::tuple<const char*, double, const char*>{"data wait", row.data, kDataColor},
          {"forward and backward", row.compute, kComputeColor},
          {"synchronize", row.sync, kSyncColor},
          {"the rest", row.other, kOtherColor}}) {
      const double width = longest > 0 ? seconds / longest * kBar : 0;
      html += fmt::format(
          "<rect class=\"part\" data-part=\"{}\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" "
          "height=\"18\" fill=\"{}\"><title>{} {}: {}</title></rect>\n",
          part, x, y, width, color, EscapeHtml(row.member->node), part, Seconds(seconds));
      x += width;
    }
    html +=
        fmt::format("<text x=\"{:.1f}\" y=\"{}\">{}</text>\n", x + 6, y + 15, Seconds(row.step));
  }
  if (rows.empty()) html += "<text x=\"0\" y=\"20\">no data recorded</text>\n";
  html +=
      "</svg>\n<table>\n<tr><th>member</th><th>steps</th><th>step</th><th>data wait</th>"
      "<th>forward and backward</th><th>synchronize</th><th>the rest</th></tr>\n";
  for (const Row& row : rows) {
    const auto& result = row.member->result;
    html += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        EscapeHtml(row.member->node), result ? std::to_string(result->steps) : "?",
        Seconds(row.step), Seconds(row.data), Seconds(row.compute), Seconds(row.sync),
        Seconds(row.other));
  }
  html += "</table>\n</section>\n";
  return html;
}

std::string WireSection(const RunReport& report) {
  const ReportMember* chief = Chief(report);
  std::string html = "<section id=\"wire\">\n<h2>Bytes on the wire</h2>\n";
  LineChartSpec wire{"wire-chart", "Bytes on the wire so far", "step", "bytes", {}};
  wire.y_from_zero = true;
  if (chief != nullptr) {
    if (chief->scalars.contains("wire/parameter_server_bytes")) {
      wire.series.push_back({"parameter servers (all workers)", ColorOf(0),
                             Points(chief->scalars, "wire/parameter_server_bytes")});
    }
    if (chief->scalars.contains("wire/all_reduce_bytes")) {
      wire.series.push_back({"all-reduce (the chief's share)", ColorOf(1),
                             Points(chief->scalars, "wire/all_reduce_bytes")});
    }
  }
  html += LineChart(wire) + "\n";
  const bool any_result = std::any_of(report.members.begin(), report.members.end(),
                                      [](const ReportMember& member) { return member.result; });
  if (!any_result) {
    // A report from a cluster job's files: the members' totals were never collected in one place.
    return html +
           "<p>Each member's totals are in its result file (autodist run keeps them) and, on a "
           "cluster, in each runtime's <code>/metrics</code> "
           "(<code>autodist_runtime_sent_bytes_total</code>, "
           "<code>autodist_runtime_received_bytes_total</code>).</p>\n</section>\n";
  }
  html +=
      "<table>\n<tr><th>member</th><th class=\"text\">role</th><th "
      "class=\"text\">traffic</th></tr>\n";
  for (const ReportMember& member : report.members) {
    std::string traffic;
    if (!member.result) {
      traffic = "no result (the member did not finish)";
    } else {
      const job::MemberResult& result = *member.result;
      if (result.parameter_server) {
        traffic += fmt::format("parameter server: {} pushed to it, {} pulled, {} updates",
                               strategy::FormatBytes(result.parameter_server->bytes_pushed),
                               strategy::FormatBytes(result.parameter_server->bytes_pulled),
                               result.parameter_server->updates);
      }
      if (result.all_reduce) {
        const auto& all_reduce = *result.all_reduce;
        traffic +=
            fmt::format("{}all-reduce: {} sent for {} reduced ({:.1f}x compression)",
                        traffic.empty() ? "" : "; ", strategy::FormatBytes(all_reduce.bytes_sent),
                        strategy::FormatBytes(all_reduce.bytes_reduced),
                        all_reduce.bytes_sent > 0 ? static_cast<double>(all_reduce.bytes_reduced) /
                                                        static_cast<double>(all_reduce.bytes_sent)
                                                  : 1.0);
      }
      if (traffic.empty()) {
        traffic =
            member.worker ? "its pushes and pulls are counted by the parameter servers" : "none";
      }
    }
    html +=
        fmt::format("<tr><td>{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td></tr>\n",
                    EscapeHtml(member.node), member.worker ? "worker" : "parameter server",
                    EscapeHtml(traffic));
  }
  html += "</table>\n</section>\n";
  return html;
}

}  // namespace

ScalarSeries ReadNewScalars(const std::string& dir, const std::vector<std::string>& earlier) {
  ScalarSeries series;
  for (const std::string& file : observe::EventFilesIn(dir)) {
    if (std::find(earlier.begin(), earlier.end(), file) != earlier.end()) continue;
    for (const observe::ScalarPoint& point : observe::ReadEventFile(file).scalars) {
      auto& points = series[point.tag];
      if (!points.empty() && points.back().first >= point.step) {
        // A step logged again (a resumed run rewrote it): the later value stands.
        std::erase_if(points, [&](const auto& p) { return p.first >= point.step; });
      }
      points.emplace_back(point.step, point.value);
    }
  }
  return series;
}

std::string RenderRunReport(const RunReport& report) {
  int64_t steps = 0;
  int workers = 0;
  int servers = 0;
  for (const ReportMember& member : report.members) {
    (member.worker ? workers : servers) += 1;
    if (member.worker && member.result) steps = std::max(steps, member.result->steps);
    // Without results, the steps the event files reached.
    for (const auto& [tag, points] : member.scalars) {
      if (!member.result && !points.empty()) steps = std::max(steps, points.back().first);
    }
  }
  const char* outcome_class = !report.succeeded.has_value() ? "unknown"
                              : *report.succeeded           ? "ok"
                                                            : "failed";
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{0}: autodist run report</title>\n<style>{1}</style>\n</head>\n<body>\n"
      "<h1>{0}</h1>\n<p class=\"outcome {2}\">{3}{4}: {5} steps, {6} workers{7}</p>\n",
      EscapeHtml(report.job_name), kStyle, outcome_class, EscapeHtml(report.outcome),
      report.wall_seconds ? fmt::format(" after {:.1f} s", *report.wall_seconds) : "", steps,
      workers, servers > 0 ? fmt::format(", {} parameter servers", servers) : "");
  html += StrategySection(report);
  html += TrainingSection(report);
  html += StepTimeSection(report);
  html += WireSection(report);
  if (!report.timeline_svg.empty()) {
    html += fmt::format(
        "<section id=\"timeline\">\n<h2>Timeline</h2>\n<p>A few steps from the middle of the run, "
        "every member on one time axis (hover for names and times). The whole run is in <code>{}"
        "</code>: open it in Perfetto.</p>\n{}\n</section>\n",
        EscapeHtml(report.timeline_file), report.timeline_svg);
  }
  html += fmt::format("<footer>Written by autodist at {}.</footer>\n</body>\n</html>\n",
                      EscapeHtml(report.generated_at));
  return html;
}

std::string UtcNow() {
  return fmt::format(
      "{:%Y-%m-%dT%H:%M:%SZ}",
      fmt::gmtime(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now())));
}

void AttachTimeline(RunReport& report, const std::string& merged_trace) {
  const nlohmann::json trace =
      nlohmann::json::parse(ReadFileBytes(merged_trace, "the merged timeline"), nullptr, false);
  AD_CHECK(!trace.is_discarded(), kInvalidArgument, "the merged timeline '{}' is not JSON",
           merged_trace);
  report.timeline_file = merged_trace;
  report.timeline_svg = RenderTimelineView(trace);
}

}  // namespace autodist::launcher

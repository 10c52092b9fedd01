// The run report's pieces without a run: the SVG line chart (ticks, points, an empty chart,
// escaping) and the page over members with and without results.
#include "launcher/run_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "launcher/svg_chart.h"
#include "launcher/timeline_view.h"
#include "tests/launcher/launcher_test_util.h"

namespace autodist::launcher {
namespace {

TEST(SvgChartTest, NiceTicksAreRoundAndCoverTheRange) {
  EXPECT_EQ(NiceTicks(0, 100, 5), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  EXPECT_EQ(NiceTicks(3, 1876, 6), (std::vector<double>{500, 1000, 1500}));
  const std::vector<double> small = NiceTicks(0.8527, 0.8537, 5);
  ASSERT_GE(small.size(), 3u);
  // A round spacing (2 or 2.5 times a power of ten, as the range's last bit falls), kept.
  const double spacing = small[1] - small[0];
  EXPECT_TRUE(std::abs(spacing - 0.0002) < 1e-12 || std::abs(spacing - 0.00025) < 1e-12) << spacing;
  for (size_t i = 1; i < small.size(); ++i) EXPECT_NEAR(small[i] - small[i - 1], spacing, 1e-12);
  EXPECT_LE(small.front(), 0.8527 + spacing);
  EXPECT_GE(small.back(), 0.8537 - spacing);
  EXPECT_EQ(NiceTicks(5, 5, 4), (std::vector<double>{5}));  // no range: the value itself
}

TEST(SvgChartTest, OnePointPerValueAndALegendPerSeries) {
  LineChartSpec spec{"c", "Loss <train>", "step", "loss", {}};
  spec.series.push_back({"train & eval", "#123456", {{1, 0.5}, {2, 0.4}, {3, 0.3}}});
  spec.series.push_back({"other", "red", {{1, 1}, {2, std::nan("")}}});  // NaN is left out
  const std::string svg = LineChart(spec);
  EXPECT_EQ(CountOccurrences(svg, "<circle class=\"point\" data-series=\"train &amp; eval\""), 3u)
      << svg;
  EXPECT_EQ(CountOccurrences(svg, "<circle class=\"point\" data-series=\"other\""), 1u);
  EXPECT_NE(svg.find("Loss &lt;train&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<train>"), std::string::npos);
  EXPECT_EQ(CountOccurrences(svg, "<polyline"), 2u);
  EXPECT_TRUE(svg.starts_with("<svg id=\"c\" class=\"chart\""));
  EXPECT_TRUE(svg.ends_with("</svg>"));
}

TEST(SvgChartTest, AChartWithoutDataSaysSo) {
  LineChartSpec spec{"empty", "Throughput", "step", "samples/s", {}};
  spec.series.push_back({"worker-0", "blue", {}});
  const std::string svg = LineChart(spec);
  EXPECT_NE(svg.find("no data recorded"), std::string::npos);
  EXPECT_EQ(svg.find("<circle"), std::string::npos);
}

TEST(SvgChartTest, ShortNumbers) {
  EXPECT_EQ(ShortNumber(0.0123), "0.0123");
  EXPECT_EQ(ShortNumber(1500), "1500");
  EXPECT_EQ(ShortNumber(12500), "12.5k");
  EXPECT_EQ(ShortNumber(3.4e9), "3.4G");
  EXPECT_EQ(EscapeHtml(R"(<a href="x">'&'</a>)"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
}

RunReport TwoWorkersOneServer() {
  RunReport report;
  report.job_name = "fmnist";
  report.outcome = "succeeded";
  report.succeeded = true;
  report.wall_seconds = 12.5;
  report.generated_at = "2026-11-26T08:00:00Z";
  ReportMember chief{"worker-0", true, job::MemberResult{}, {}};
  chief.result->steps = 3;
  chief.result->strategy_summary = "builder: PS <sync>\n";
  chief.scalars["train/loss"] = {{1, 0.9}, {2, 0.7}, {3, 0.6}};
  chief.scalars["eval/accuracy"] = {{3, 0.8}};
  chief.scalars["perf/step_seconds"] = {{1, 0.010}, {2, 0.012}};
  chief.scalars["perf/data_wait_seconds"] = {{1, 0.001}, {2, 0.001}};
  chief.scalars["perf/compute_seconds"] = {{1, 0.004}, {2, 0.004}};
  chief.scalars["perf/synchronize_seconds"] = {{1, 0.004}, {2, 0.006}};
  chief.scalars["wire/parameter_server_bytes"] = {{1, 1000}, {2, 2000}, {3, 3000}};
  report.members.push_back(chief);
  report.members.push_back({"worker-1", true, std::nullopt, {}});  // failed: no result
  ReportMember server{"ps-0", false, job::MemberResult{}, {}};
  server.result->parameter_server = job::ParameterServerTraffic{3 << 20, 3 << 20, 9};
  report.members.push_back(server);
  return report;
}

TEST(RunReportTest, TheStrategyCurvesStepTimesAndTraffic) {
  const std::string html = RenderRunReport(TwoWorkersOneServer());
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(html.find("<p class=\"outcome ok\">succeeded after 12.5 s: 3 steps, 2 workers, 1 "
                      "parameter servers</p>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<pre>builder: PS &lt;sync&gt;\n</pre>"), std::string::npos);
  EXPECT_EQ(CountOccurrences(html, "data-series=\"train loss\" cx"), 3u);
  EXPECT_NE(html.find("id=\"accuracy-chart\""), std::string::npos);
  // worker-0: 11 ms a step, 1 + 4 + 5 ms of it accounted for, 1 ms the rest.
  EXPECT_NE(html.find("<td>worker-0</td><td>3</td><td>11.00 ms</td><td>1.00 ms</td><td>4.00 ms</td>"
                      "<td>5.00 ms</td><td>1.00 ms</td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("no result (the member did not finish)"), std::string::npos);
  EXPECT_NE(html.find("parameter server: 3.0 MiB pushed to it, 3.0 MiB pulled, 9 updates"),
            std::string::npos);
  EXPECT_EQ(CountOccurrences(html, "data-series=\"parameter servers (all workers)\" cx"), 3u);
  // Self-contained: nothing to run, nothing to fetch.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"(\s(src|href)=)")));
}

TEST(RunReportTest, AFailedRunWithoutTheChiefsResultStillRenders) {
  RunReport report = TwoWorkersOneServer();
  report.succeeded = false;
  report.outcome = "failed: worker-0 exited with code 1 <oops>";
  report.members[0].result.reset();
  report.members[0].scalars.clear();
  const std::string html = RenderRunReport(report);
  EXPECT_NE(html.find("<p class=\"outcome failed\">failed: worker-0 exited with code 1 "
                      "&lt;oops&gt; after"),
            std::string::npos);
  EXPECT_NE(html.find("the compiled strategy is not known here"), std::string::npos);
  EXPECT_NE(html.find("no data recorded"), std::string::npos);
}

}  // namespace
}  // namespace autodist::launcher

namespace autodist::launcher {
namespace {

// A merged trace: the chief (pid 1) takes five 10 µs steps at 0, 10, ... but the third takes
// 100 µs (an evaluation); a server (pid 2) applies an update in each.
nlohmann::json FiveSteps() {
  nlohmann::json events = nlohmann::json::array();
  events.push_back(
      {{"ph", "M"}, {"name", "process_name"}, {"pid", 1}, {"args", {{"name", "worker-0"}}}});
  events.push_back(
      {{"ph", "M"}, {"name", "process_sort_index"}, {"pid", 1}, {"args", {{"sort_index", 1}}}});
  events.push_back({{"ph", "M"},
                    {"name", "thread_name"},
                    {"pid", 1},
                    {"tid", 7},
                    {"args", {{"name", "training"}}}});
  events.push_back(
      {{"ph", "M"}, {"name", "process_name"}, {"pid", 2}, {"args", {{"name", "ps-<0>"}}}});
  events.push_back(
      {{"ph", "M"}, {"name", "process_sort_index"}, {"pid", 2}, {"args", {{"sort_index", 2}}}});
  double start = 0;
  for (int step = 1; step <= 5; ++step) {
    const double length = step == 3 ? 100 : 10;
    events.push_back({{"ph", "X"},
                      {"cat", "step"},
                      {"name", "step " + std::to_string(step)},
                      {"pid", 1},
                      {"tid", 7},
                      {"ts", start},
                      {"dur", length}});
    events.push_back({{"ph", "X"},
                      {"cat", "compute"},
                      {"name", "forward"},
                      {"pid", 1},
                      {"tid", 7},
                      {"ts", start + 1},
                      {"dur", 4}});
    events.push_back({{"ph", "X"},
                      {"cat", "optimizer"},
                      {"name", "apply w"},
                      {"pid", 2},
                      {"tid", 3},
                      {"ts", start + 6},
                      {"dur", 2}});
    start += length;
  }
  return {{"traceEvents", events}};
}

TEST(TimelineViewTest, TypicalStepsEveryMemberNestedSpans) {
  const std::string svg = RenderTimelineView(FiveSteps(), 2);
  // From the middle (steps 2-3) on, the first window without the long step: steps 4 and 5.
  EXPECT_NE(svg.find("from the start of the chief's step 4"), std::string::npos) << svg;
  EXPECT_EQ(CountOccurrences(svg, "data-category=\"step\""), 2u);
  EXPECT_EQ(CountOccurrences(svg, "data-category=\"compute\""), 2u);
  EXPECT_EQ(CountOccurrences(svg, "data-category=\"optimizer\""), 2u);
  EXPECT_NE(svg.find(">worker-0 training</text>"), std::string::npos);
  EXPECT_NE(svg.find(">ps-&lt;0&gt; thread 3</text>"), std::string::npos);
  // forward (at 121 µs of a 120-140 µs window) sits one row below its step (y 24 + 14).
  EXPECT_NE(svg.find("data-category=\"compute\" x=\"191.0\" y=\"38\""), std::string::npos) << svg;
}

TEST(TimelineViewTest, NothingToShowWithoutSteps) {
  EXPECT_EQ(RenderTimelineView(nlohmann::json::object()), "");
  nlohmann::json trace = FiveSteps();
  for (auto& event : trace["traceEvents"]) {
    if (event.value("cat", "") == "step") event["cat"] = "other";
  }
  EXPECT_EQ(RenderTimelineView(trace), "");
}

}  // namespace
}  // namespace autodist::launcher

#include "launcher/timeline_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "launcher/svg_chart.h"

namespace autodist::launcher {
namespace {

constexpr int kLabelWidth = 150;
constexpr int kPlotWidth = 820;
constexpr int kRowHeight = 14;
constexpr int kLaneGap = 8;
constexpr int kAxisHeight = 40;
constexpr int kLegendHeight = 24;

struct Span {
  std::string name;
  std::string category;
  double start = 0;  // µs
  double end = 0;
  int depth = 0;
};

struct Lane {
  std::string label;
  std::vector<Span> spans;
  int depths = 1;
};

// Span categories (timeline.h's callers) and their colors, in legend order.
const std::vector<std::pair<std::string, std::string>>& Categories() {
  static const std::vector<std::pair<std::string, std::string>> categories = {
      {"step", "#d9d9d9"},      {"data", "#9ecae1"},       {"compute", "#3182bd"},
      {"sync", "#e6550d"},      {"ps", "#fd8d3c"},         {"collective", "#fdae6b"},
      {"optimizer", "#31a354"}, {"checkpoint", "#756bb1"}, {"eval", "#969696"}};
  return categories;
}

std::string ColorOf(const std::string& category) {
  for (const auto& [name, color] : Categories()) {
    if (name == category) return color;
  }
  return "#bcbddc";
}

// Process and thread names of the merged trace's metadata events.
struct Names {
  std::map<int64_t, std::string> processes;
  std::map<int64_t, int64_t> process_order;
  std::map<std::pair<int64_t, int64_t>, std::string> threads;
};

Names ReadNames(const nlohmann::json& events) {
  Names names;
  for (const nlohmann::json& event : events) {
    if (event.value("ph", "") != "M" || !event.contains("args")) continue;
    const int64_t pid = event.value("pid", int64_t{0});
    const std::string what = event.value("name", "");
    if (what == "process_name") names.processes[pid] = event["args"].value("name", "");
    if (what == "process_sort_index") {
      names.process_order[pid] = event["args"].value("sort_index", pid);
    }
    if (what == "thread_name") {
      names.threads[{pid, event.value("tid", int64_t{0})}] = event["args"].value("name", "");
    }
  }
  return names;
}

}  // namespace

std::string RenderTimelineView(const nlohmann::json& trace, int steps) {
  if (!trace.is_object() || !trace.contains("traceEvents") || steps < 1) return "";
  const nlohmann::json& events = trace["traceEvents"];
  const Names names = ReadNames(events);
  // The chief: the process first in order; its step spans choose the window.
  int64_t chief = -1;
  for (const auto& [pid, order] : names.process_order) {
    if (chief < 0 || order < names.process_order.at(chief)) chief = pid;
  }
  std::vector<Span> step_spans;
  for (const nlohmann::json& event : events) {
    if (event.value("ph", "") == "X" && event.value("cat", "") == "step" &&
        event.value("pid", int64_t{-1}) == chief) {
      const double start = event.value("ts", 0.0);
      step_spans.push_back(
          {event.value("name", ""), "step", start, start + event.value("dur", 0.0)});
    }
  }
  if (step_spans.empty()) return "";
  std::sort(step_spans.begin(), step_spans.end(),
            [](const Span& a, const Span& b) { return a.start < b.start; });
  const size_t shown = std::min<size_t>(static_cast<size_t>(steps), step_spans.size());
  // Typical steps: from the middle on, the first window whose steps all take at most twice the
  // median step (not one with an evaluation or a checkpoint in it); the middle when none.
  std::vector<double> durations(step_spans.size());
  std::transform(step_spans.begin(), step_spans.end(), durations.begin(),
                 [](const Span& span) { return span.end - span.start; });
  const auto half = static_cast<std::ptrdiff_t>(durations.size() / 2);
  std::nth_element(durations.begin(), durations.begin() + half, durations.end());
  const double median = durations[durations.size() / 2];
  const size_t middle = (step_spans.size() - shown) / 2;
  size_t first = middle;
  for (size_t candidate = middle; candidate + shown <= step_spans.size(); ++candidate) {
    const bool typical =
        std::all_of(step_spans.begin() + static_cast<std::ptrdiff_t>(candidate),
                    step_spans.begin() + static_cast<std::ptrdiff_t>(candidate + shown),
                    [&](const Span& span) { return span.end - span.start <= 2 * median; });
    if (typical) {
      first = candidate;
      break;
    }
  }
  const double t0 = step_spans[first].start;
  const double t1 = std::max(step_spans[first + shown - 1].end, t0 + 1);

  // Spans overlapping the window, clipped to it, by lane (member, thread).
  std::map<std::pair<int64_t, int64_t>, Lane> lanes;
  for (const nlohmann::json& event : events) {
    if (event.value("ph", "") != "X") continue;
    const double start = event.value("ts", 0.0);
    const double end = start + event.value("dur", 0.0);
    if (end <= t0 || start >= t1) continue;  // touching the window is not in it
    const int64_t pid = event.value("pid", int64_t{0});
    const int64_t tid = event.value("tid", int64_t{0});
    Lane& lane = lanes[{pid, tid}];
    lane.spans.push_back(
        {event.value("name", ""), event.value("cat", ""), std::max(start, t0), std::min(end, t1)});
  }
  // Nesting depth per lane: a span inside another (same thread) sits one row below it.
  for (auto& [key, lane] : lanes) {
    std::sort(lane.spans.begin(), lane.spans.end(), [](const Span& a, const Span& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    std::vector<double> open_ends;
    for (Span& span : lane.spans) {
      while (!open_ends.empty() && open_ends.back() <= span.start) open_ends.pop_back();
      span.depth = static_cast<int>(open_ends.size());
      open_ends.push_back(span.end);
      lane.depths = std::max(lane.depths, span.depth + 1);
    }
    const auto [pid, tid] = key;
    const auto process = names.processes.find(pid);
    const auto thread = names.threads.find(key);
    lane.label = fmt::format(
        "{} {}", process != names.processes.end() ? process->second : fmt::format("pid {}", pid),
        thread != names.threads.end() ? thread->second : fmt::format("thread {}", tid));
  }
  // Lanes in member order, then by thread.
  std::vector<std::pair<std::pair<int64_t, int64_t>, Lane*>> ordered;
  ordered.reserve(lanes.size());
  for (auto& [key, lane] : lanes) ordered.emplace_back(key, &lane);
  std::sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) {
    const auto order = [&](int64_t pid) {
      const auto found = names.process_order.find(pid);
      return found != names.process_order.end() ? found->second : pid;
    };
    return std::make_pair(order(a.first.first), a.first.second) <
           std::make_pair(order(b.first.first), b.first.second);
  });

  int height = kLegendHeight;
  for (const auto& [key, lane] : ordered) height += lane->depths * kRowHeight + kLaneGap;
  height += kAxisHeight;
  const int width = kLabelWidth + kPlotWidth + 10;
  const auto sx = [&](double ts) { return kLabelWidth + (ts - t0) / (t1 - t0) * kPlotWidth; };
  std::string svg = fmt::format(
      "<svg id=\"timeline-chart\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"Timeline "
      "of {2} steps\">\n",
      width, height, shown);
  double legend_x = kLabelWidth;
  for (const auto& [category, color] : Categories()) {
    svg += fmt::format(
        "<rect x=\"{0:.0f}\" y=\"4\" width=\"10\" height=\"10\" fill=\"{1}\"/><text "
        "class=\"legend\" x=\"{2:.0f}\" y=\"13\">{3}</text>\n",
        legend_x, color, legend_x + 14, category);
    legend_x += 24 + 7.0 * static_cast<double>(category.size());
  }
  int y = kLegendHeight;
  for (const auto& [key, lane] : ordered) {
    svg += fmt::format("<text x=\"0\" y=\"{}\">{}</text>\n", y + 11, EscapeHtml(lane->label));
    for (const Span& span : lane->spans) {
      const double x = sx(span.start);
      svg += fmt::format(
          "<rect class=\"span\" data-category=\"{}\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" "
          "height=\"{}\" fill=\"{}\"><title>{}: {:.3f} ms</title></rect>\n",
          EscapeHtml(span.category), x, y + span.depth * kRowHeight,
          std::max(0.5, sx(span.end) - x), kRowHeight - 2, ColorOf(span.category),
          EscapeHtml(span.name), (span.end - span.start) / 1e3);
    }
    y += lane->depths * kRowHeight + kLaneGap;
  }
  // The time axis: milliseconds from the window's start.
  for (const double tick : NiceTicks(0, (t1 - t0) / 1e3, 8)) {
    const double x = sx(t0 + tick * 1e3);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ccc\"/>"
        "<text class=\"tick x\" x=\"{0:.1f}\" y=\"{3}\">{4}</text>\n",
        x, kLegendHeight, y, y + 14, ShortNumber(tick));
  }
  svg += fmt::format(
      "<text class=\"axis\" x=\"{:.0f}\" y=\"{}\">milliseconds from the start of the chief's "
      "{}</text>\n</svg>",
      kLabelWidth + kPlotWidth / 2.0, y + 32, EscapeHtml(step_spans[first].name));
  return svg;
}

}  // namespace autodist::launcher

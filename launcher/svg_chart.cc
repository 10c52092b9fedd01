#include "launcher/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace autodist::launcher {
namespace {

// Room around the plot for ticks, labels and the legend.
constexpr int kLeft = 64;
constexpr int kRight = 16;
constexpr int kTop = 32;
constexpr int kBottom = 64;

struct Range {
  double low = std::numeric_limits<double>::infinity();
  double high = -std::numeric_limits<double>::infinity();
  void Add(double value) {
    low = std::min(low, value);
    high = std::max(high, value);
  }
  // A range with room in it: a single value (or none) still spans something.
  void Widen() {
    if (!std::isfinite(low)) low = high = 0;
    if (high - low < 1e-12) {
      const double pad = std::abs(high) > 0 ? std::abs(high) * 0.1 : 1;
      low -= pad;
      high += pad;
    }
  }
};

// An axis label: as many decimals as the ticks' spacing needs (0.853, 0.854 rather than
// 0.853 twice), large values shortened.
std::string TickLabel(double value, const std::vector<double>& ticks) {
  const double spacing = ticks.size() > 1 ? ticks[1] - ticks[0] : std::abs(value);
  if (std::abs(value) >= 1e4 || spacing >= 1e4) return ShortNumber(value);
  // One more decimal than the spacing's leading digit needs covers steps of 2.5 too.
  const int decimals =
      spacing > 0 ? std::clamp(1 - static_cast<int>(std::floor(std::log10(spacing))), 0, 9) : 0;
  std::string text = fmt::format("{:.{}f}", value, decimals);
  // 0.50 -> 0.5, 1.00 -> 1, but never an integer's own zeros.
  if (text.find('.') == std::string::npos) return text;
  const size_t last = text.find_last_not_of('0');
  return text.substr(0, text[last] == '.' ? last : last + 1);
}

}  // namespace

std::string EscapeHtml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string ShortNumber(double value) {
  const double magnitude = std::abs(value);
  if (magnitude >= 1e9) return fmt::format("{:.3g}G", value / 1e9);
  if (magnitude >= 1e6) return fmt::format("{:.3g}M", value / 1e6);
  if (magnitude >= 1e4) return fmt::format("{:.3g}k", value / 1e3);
  if (magnitude >= 100) return fmt::format("{:.0f}", value);
  return fmt::format("{:.3g}", value);
}

std::vector<double> NiceTicks(double low, double high, int count) {
  if (!(high > low) || count < 1) return {low};
  const double raw = (high - low) / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (const double factor : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = factor * power;
    if (step >= raw) break;
  }
  // Counted in whole steps, so that no rounding accumulates along the axis.
  const auto first = static_cast<int64_t>(std::ceil(low / step - 1e-9));
  const auto last = static_cast<int64_t>(std::floor(high / step + 1e-9));
  std::vector<double> ticks;
  for (int64_t i = first; i <= last; ++i) ticks.push_back(static_cast<double>(i) * step);
  return ticks;
}

std::string LineChart(const LineChartSpec& spec) {
  Range x;
  Range y;
  size_t points = 0;
  for (const ChartSeries& series : spec.series) {
    for (const auto& [px, py] : series.points) {
      if (!std::isfinite(px) || !std::isfinite(py)) continue;
      x.Add(px);
      y.Add(py);
      ++points;
    }
  }
  std::string svg = fmt::format(
      R"(<svg id="{}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" )"
      R"(viewBox="0 0 {} {}" role="img" aria-label="{}">)"
      "\n<text class=\"title\" x=\"{}\" y=\"20\">{}</text>\n",
      EscapeHtml(spec.id), spec.width, spec.height, spec.width, spec.height, EscapeHtml(spec.title),
      kLeft, EscapeHtml(spec.title));
  if (points == 0) {
    svg += fmt::format("<text class=\"empty\" x=\"{}\" y=\"{}\">no data recorded</text>\n</svg>",
                       kLeft, spec.height / 2);
    return svg;
  }
  if (spec.y_from_zero) y.Add(0);
  x.Widen();
  y.Widen();
  const std::vector<double> x_ticks = NiceTicks(x.low, x.high, 6);
  const std::vector<double> y_ticks = NiceTicks(y.low, y.high, 5);
  // The axes cover the ticks too, so the outermost gridlines sit on the plot's edge.
  x.low = std::min(x.low, x_ticks.front());
  x.high = std::max(x.high, x_ticks.back());
  y.low = std::min(y.low, y_ticks.front());
  y.high = std::max(y.high, y_ticks.back());
  const double plot_width = spec.width - kLeft - kRight;
  const double plot_height = spec.height - kTop - kBottom;
  const auto sx = [&](double value) {
    return kLeft + (value - x.low) / (x.high - x.low) * plot_width;
  };
  const auto sy = [&](double value) {
    return kTop + plot_height - (value - y.low) / (y.high - y.low) * plot_height;
  };

  svg += "<g class=\"grid\">\n";
  for (const double tick : y_ticks) {
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text class=\"tick y\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
        sx(x.low), sy(tick), sx(x.high), sy(tick), kLeft - 6.0, sy(tick) + 4,
        TickLabel(tick, y_ticks));
  }
  for (const double tick : x_ticks) {
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text class=\"tick x\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
        sx(tick), sy(y.low), sx(tick), sy(y.high), sx(tick), sy(y.low) + 16,
        TickLabel(tick, x_ticks));
  }
  svg += "</g>\n";
  svg += fmt::format(
      "<text class=\"axis\" x=\"{:.1f}\" y=\"{}\">{}</text>\n"
      "<text class=\"axis\" transform=\"translate(14 {:.1f}) rotate(-90)\">{}</text>\n",
      kLeft + plot_width / 2, spec.height - kBottom + 34, EscapeHtml(spec.x_label),
      kTop + plot_height / 2, EscapeHtml(spec.y_label));

  double legend_x = kLeft;
  for (const ChartSeries& series : spec.series) {
    std::string line;
    std::string markers;
    for (const auto& [px, py] : series.points) {
      if (!std::isfinite(px) || !std::isfinite(py)) continue;
      line += fmt::format("{}{:.1f},{:.1f}", line.empty() ? "" : " ", sx(px), sy(py));
      markers += fmt::format(
          "<circle class=\"point\" data-series=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" "
          "fill=\"{}\"><title>{}: {} at {}</title></circle>\n",
          EscapeHtml(series.name), sx(px), sy(py), EscapeHtml(series.color),
          EscapeHtml(series.name), ShortNumber(py), ShortNumber(px));
    }
    svg += fmt::format(
        "<g class=\"series\" data-series=\"{0}\">\n<polyline fill=\"none\" stroke=\"{1}\" "
        "stroke-width=\"1.5\" points=\"{2}\"/>\n{3}</g>\n"
        "<rect x=\"{4:.1f}\" y=\"{5}\" width=\"10\" height=\"10\" fill=\"{1}\"/>"
        "<text class=\"legend\" x=\"{6:.1f}\" y=\"{7}\">{0}</text>\n",
        EscapeHtml(series.name), EscapeHtml(series.color), line, markers, legend_x,
        spec.height - 18, legend_x + 14, spec.height - 9);
    legend_x += 28 + 7.0 * static_cast<double>(series.name.size());
  }
  svg += "</svg>";
  return svg;
}

}  // namespace autodist::launcher

// Line charts as inline SVG, for the run report (run_report.h): axes with round ticks, one
// polyline per series with a marker per point, and a legend. No script, no external resource,
// so the page they sit in stays self-contained.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace autodist::launcher {

struct ChartSeries {
  std::string name;   // in the legend, and the data-series attribute of its markers
  std::string color;  // any CSS color
  std::vector<std::pair<double, double>> points;  // (x, y), in x order
};

struct LineChartSpec {
  std::string id;  // the svg element's id
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<ChartSeries> series;
  bool y_from_zero = false;  // start the y axis at 0 (throughput, bytes), not at the data's least
  int width = 640;
  int height = 280;
};

// An <svg> element; a chart without points says so instead of drawing empty axes.
std::string LineChart(const LineChartSpec& spec);

// Up to about `count` round values ("nice numbers") covering [low, high], in order.
std::vector<double> NiceTicks(double low, double high, int count);

// The text escaped for HTML and SVG element content and attribute values.
std::string EscapeHtml(const std::string& text);

// A short number for axes and tables: 1.2k, 3.4M, 0.0123.
std::string ShortNumber(double value);

}  // namespace autodist::launcher

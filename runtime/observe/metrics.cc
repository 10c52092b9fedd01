#include "runtime/observe/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "runtime/common/error.h"

namespace autodist::observe {
namespace {

bool ValidName(const std::string& name, bool colon_allowed) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_allowed && c == ':');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// The text format's escapes: backslash and line feed in HELP text, and the double quote too in
// label values.
std::string Escape(const std::string& text, bool quotes) {
  std::string out;
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(const std::string& text) { return Escape(text, false); }
std::string EscapeLabelValue(const std::string& text) { return Escape(text, true); }

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

}  // namespace

void Counter::Inc(double by) {
  AD_CHECK(by >= 0, kInternal, "a counter cannot decrease (Inc({}))", by);
  value_.fetch_add(by);
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    AD_CHECK(!std::isnan(bounds_[i]) && (i == 0 || bounds_[i] > bounds_[i - 1]), kInvalidArgument,
             "histogram buckets must be strictly increasing, got {} after {}", bounds_[i],
             i == 0 ? 0.0 : bounds_[i - 1]);
  }
  if (!bounds_.empty() && std::isinf(bounds_.back())) bounds_.pop_back();  // +Inf is implicit
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0);
}

void Histogram::Observe(double value) {
  // Prometheus buckets are "less than or equal to" their bound.
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  counts_[bucket].fetch_add(1);
  sum_.fetch_add(value);
}

std::vector<uint64_t> Histogram::CumulativeCounts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) out[i] = total += counts_[i].load();
  return out;
}

std::vector<double> DefaultBuckets() { return {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}; }

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  AD_CHECK(start > 0 && factor > 1 && count > 0, kInvalidArgument,
           "exponential buckets need start > 0, factor > 1, count > 0 (got {}, {}, {})", start,
           factor, count);
  std::vector<double> out;
  for (int i = 0; i < count; ++i, start *= factor) out.push_back(start);
  return out;
}

MetricFamily::MetricFamily(std::string name, std::string help, std::string type,
                           std::vector<std::string> label_names)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(std::move(type)),
      label_names_(std::move(label_names)) {
  AD_CHECK(ValidName(name_, true), kInvalidArgument,
           "metric name '{}': expected [a-zA-Z_:][a-zA-Z0-9_:]*", name_);
  for (const auto& label : label_names_) {
    AD_CHECK(ValidName(label, false) && !label.starts_with("__"), kInvalidArgument,
             "metric '{}': label name '{}': expected [a-zA-Z_][a-zA-Z0-9_]* without a leading __",
             name_, label);
    AD_CHECK(!(type_ == "histogram" && label == "le"), kInvalidArgument,
             "histogram '{}': the label name 'le' is reserved for buckets", name_);
  }
}

void MetricFamily::CheckArity(const Labels& values) const {
  AD_CHECK(values.size() == label_names_.size(), kInternal,
           "metric '{}' has {} label(s), {} value(s) given", name_, label_names_.size(),
           values.size());
}

void MetricFamily::Expose(std::string& out) const {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name_, EscapeHelp(help_), name_, type_);
  ExposeChildren(out);
}

void MetricFamily::Sample(std::string& out, const std::string& suffix, const Labels& values,
                          const std::string& extra, double value) const {
  out += name_ + suffix;
  std::string labels;
  for (size_t i = 0; i < values.size(); ++i) {
    labels += fmt::format("{}{}=\"{}\"", labels.empty() ? "" : ",", label_names_[i],
                          EscapeLabelValue(values[i]));
  }
  if (!extra.empty()) labels += (labels.empty() ? "" : ",") + extra;
  if (!labels.empty()) out += "{" + labels + "}";
  out += " " + FormatValue(value) + "\n";
}

template <>
void Family<Counter>::ExposeChildren(std::string& out) const {
  std::lock_guard lock(mutex_);
  for (const auto& [values, child] : children_) Sample(out, "", values, "", child->Value());
}

template <>
void Family<Gauge>::ExposeChildren(std::string& out) const {
  std::lock_guard lock(mutex_);
  for (const auto& [values, child] : children_) Sample(out, "", values, "", child->Value());
}

template <>
void Family<Histogram>::ExposeChildren(std::string& out) const {
  std::lock_guard lock(mutex_);
  for (const auto& [values, child] : children_) {
    const auto counts = child->CumulativeCounts();
    for (size_t i = 0; i < child->bounds().size(); ++i) {
      Sample(out, "_bucket", values, fmt::format("le=\"{}\"", FormatValue(child->bounds()[i])),
             static_cast<double>(counts[i]));
    }
    Sample(out, "_bucket", values, "le=\"+Inf\"", static_cast<double>(counts.back()));
    Sample(out, "_sum", values, "", child->Sum());
    Sample(out, "_count", values, "", static_cast<double>(counts.back()));
  }
}

template <typename Metric>
Family<Metric>& Registry::Add(std::unique_ptr<Family<Metric>> family) {
  std::lock_guard lock(mutex_);
  const std::string name = family->name();
  AD_CHECK(!families_.contains(name), kInvalidArgument, "metric '{}' is already registered", name);
  // An unlabeled metric is exposed (as 0) from the start, so a scrape never sees it missing.
  if (family->label_count() == 0) family->With();
  auto& slot = families_[name];
  slot = std::move(family);
  return static_cast<Family<Metric>&>(*slot);
}

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help,
                                      std::vector<std::string> labels) {
  return Add(std::make_unique<Family<Counter>>(name, help, "counter", std::move(labels),
                                               [] { return std::make_unique<Counter>(); }));
}

Family<Gauge>& Registry::AddGauge(const std::string& name, const std::string& help,
                                  std::vector<std::string> labels) {
  return Add(std::make_unique<Family<Gauge>>(name, help, "gauge", std::move(labels),
                                             [] { return std::make_unique<Gauge>(); }));
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, const std::string& help,
                                          std::vector<double> buckets,
                                          std::vector<std::string> labels) {
  // Validate the buckets once here rather than at the first child.
  Histogram check(buckets);
  return Add(std::make_unique<Family<Histogram>>(
      name, help, "histogram", std::move(labels),
      [buckets] { return std::make_unique<Histogram>(buckets); }));
}

std::string Registry::Expose() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& [name, family] : families_) family->Expose(out);
  return out;
}

}  // namespace autodist::observe

// A tiny metrics registry with Prometheus text exposition (format 0.0.4): counters, gauges and
// histograms, each a family of children keyed by label values. Updates are lock-free atomics;
// only creating a child or exposing takes a lock. Names are the callers' (the operator's in
// operator/controller/operator_metrics.h, the runtime's in runtime_metrics.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace autodist::observe {

class Counter {
 public:
  // `by` must not be negative: counters only go up (Prometheus detects resets by decreases).
  void Inc(double by = 1);
  double Value() const { return value_.load(); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double value) { value_.store(value); }
  void Inc(double by = 1) { value_.fetch_add(by); }
  void Dec(double by = 1) { value_.fetch_sub(by); }
  double Value() const { return value_.load(); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `bounds`: the buckets' upper bounds, strictly increasing; +Inf is implicit.
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  const std::vector<double>& bounds() const { return bounds_; }
  // Cumulative counts per bound (the last is +Inf, i.e. the total count), and the sum.
  std::vector<uint64_t> CumulativeCounts() const;
  double Sum() const { return sum_.load(); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket, not cumulative; +Inf last
  std::atomic<double> sum_{0};
};

// Prometheus' default buckets (seconds): 5ms .. 10s.
std::vector<double> DefaultBuckets();
// `count` buckets starting at `start`, each `factor` times the previous.
std::vector<double> ExponentialBuckets(double start, double factor, int count);

class MetricFamily {
 public:
  MetricFamily(std::string name, std::string help, std::string type,
               std::vector<std::string> label_names);
  virtual ~MetricFamily() = default;
  const std::string& name() const { return name_; }
  size_t label_count() const { return label_names_.size(); }
  // Appends this family's HELP, TYPE and samples.
  void Expose(std::string& out) const;

 protected:
  using Labels = std::vector<std::string>;
  virtual void ExposeChildren(std::string& out) const = 0;
  // `name{a="x",b="y"[,extra]} value` (braces left out when there are no labels).
  void Sample(std::string& out, const std::string& suffix, const Labels& values,
              const std::string& extra, double value) const;
  void CheckArity(const Labels& values) const;

  std::string name_;
  std::string help_;
  std::string type_;
  Labels label_names_;
};

template <typename Metric>
class Family : public MetricFamily {
 public:
  Family(std::string name, std::string help, std::string type, std::vector<std::string> labels,
         std::function<std::unique_ptr<Metric>()> make)
      : MetricFamily(std::move(name), std::move(help), std::move(type), std::move(labels)),
        make_(std::move(make)) {}

  // The child for these label values (one per label name, in order), made on first use. The
  // reference stays valid for the registry's lifetime.
  Metric& With(const std::vector<std::string>& values = {}) {
    CheckArity(values);
    std::lock_guard lock(mutex_);
    auto& child = children_[values];
    if (!child) child = make_();
    return *child;
  }

 protected:
  void ExposeChildren(std::string& out) const override;

 private:
  std::function<std::unique_ptr<Metric>()> make_;
  mutable std::mutex mutex_;
  std::map<Labels, std::unique_ptr<Metric>> children_;
};

template <>
void Family<Counter>::ExposeChildren(std::string& out) const;
template <>
void Family<Gauge>::ExposeChildren(std::string& out) const;
template <>
void Family<Histogram>::ExposeChildren(std::string& out) const;

class Registry {
 public:
  // Names follow Prometheus' rules ([a-zA-Z_:][a-zA-Z0-9_:]*, labels without ':' or a leading
  // "__"); a name registered twice throws autodist::Error (kInvalidArgument).
  Family<Counter>& AddCounter(const std::string& name, const std::string& help,
                              std::vector<std::string> labels = {});
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help,
                          std::vector<std::string> labels = {});
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help,
                                  std::vector<double> buckets = DefaultBuckets(),
                                  std::vector<std::string> labels = {});

  // Every family in name order, in the text exposition format.
  std::string Expose() const;

 private:
  template <typename Metric>
  Family<Metric>& Add(std::unique_ptr<Family<Metric>> family);

  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<MetricFamily>> families_;
};

// The Content-Type of Registry::Expose()'s text.
inline constexpr const char* kExpositionContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace autodist::observe

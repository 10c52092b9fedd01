// The cost of the runtime's metrics on the paths that update them: a counter increment, a
// histogram observation, a gauge set, a labeled child's lookup (all-reduce groups), and the
// scoped helpers the parameter server wraps its updates and waits in. One thread, and the
// counter under 2 threads (a worker's training thread and its communication thread, or a
// server's gRPC threads, update the same counters).
//
//   build/bin/metrics_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include "runtime/observe/runtime_metrics.h"

namespace {

using autodist::observe::ProcessMetrics;

void CounterInc(benchmark::State& state) {
  autodist::observe::Counter& counter = ProcessMetrics().parameter_server_sent_bytes;
  for (auto _ : state) counter.Inc(4096);
}
BENCHMARK(CounterInc)->Threads(1)->Threads(2);

void HistogramObserve(benchmark::State& state) {
  autodist::observe::Histogram& histogram = ProcessMetrics().step_duration;
  double value = 0.001;
  for (auto _ : state) {
    histogram.Observe(value);
    value = value < 10 ? value * 1.7 : 0.001;  // walk the buckets
  }
}
BENCHMARK(HistogramObserve);

void GaugeSet(benchmark::State& state) {
  autodist::observe::Gauge& gauge = ProcessMetrics().loss;
  double value = 0.5;
  for (auto _ : state) gauge.Set(value += 1e-9);
}
BENCHMARK(GaugeSet);

void LabeledChildLookup(benchmark::State& state) {
  auto& family = ProcessMetrics().all_reduce_duration;
  for (int group = 0; group < 8; ++group) family.With({"group-" + std::to_string(group)});
  const std::vector<std::string> labels = {"group-3"};
  for (auto _ : state) benchmark::DoNotOptimize(&family.With(labels));
}
BENCHMARK(LabeledChildLookup);

void ScopedDurationAndGauge(benchmark::State& state) {
  autodist::observe::RuntimeMetrics& metrics = ProcessMetrics();
  for (auto _ : state) {
    const autodist::observe::ScopedGaugeIncrement waiting(metrics.ps_waiting_calls);
    const autodist::observe::ScopedDuration timed(metrics.ps_apply_duration);
  }
}
BENCHMARK(ScopedDurationAndGauge);

}  // namespace

BENCHMARK_MAIN();

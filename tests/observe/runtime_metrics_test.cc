// The runtime's metric names (runtime_metrics.h): every family registered with its type from the
// start, the byte counters per channel, the member's identity, and the scoped helpers.
#include "runtime/observe/runtime_metrics.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

namespace autodist::observe {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(RuntimeMetricsTest, EveryFamilyIsExposedWithItsTypeFromTheStart) {
  RuntimeMetrics metrics;  // a fresh set, not the process's
  const std::string text = metrics.registry.Expose();
  for (const char* line :
       {"# TYPE autodist_runtime_steps_total counter",
        "# TYPE autodist_runtime_step_duration_seconds histogram",
        "# TYPE autodist_runtime_samples_total counter", "# TYPE autodist_runtime_loss gauge",
        "# TYPE autodist_runtime_learning_rate gauge",
        "# TYPE autodist_runtime_sent_bytes_total counter",
        "# TYPE autodist_runtime_received_bytes_total counter",
        "# TYPE autodist_runtime_ps_waiting_calls gauge",
        "# TYPE autodist_runtime_ps_apply_duration_seconds histogram",
        "# TYPE autodist_runtime_ps_updates_total counter",
        "# TYPE autodist_runtime_all_reduce_duration_seconds histogram",
        "# TYPE autodist_runtime_member_info gauge", "autodist_runtime_steps_total 0",
        R"(autodist_runtime_sent_bytes_total{channel="parameter_server"} 0)",
        R"(autodist_runtime_sent_bytes_total{channel="all_reduce"} 0)",
        R"(autodist_runtime_received_bytes_total{channel="parameter_server"} 0)",
        R"(autodist_runtime_received_bytes_total{channel="all_reduce"} 0)"}) {
    EXPECT_TRUE(Has(text, line)) << line << "\n" << text;
  }
}

TEST(RuntimeMetricsTest, CountsGoToTheirChannelAndGroup) {
  RuntimeMetrics metrics;
  metrics.parameter_server_sent_bytes.Inc(1000);
  metrics.all_reduce_received_bytes.Inc(24);
  metrics.all_reduce_duration.With({"group-1"}).Observe(0.002);
  metrics.steps.Inc();
  metrics.step_duration.Observe(0.05);
  const std::string text = metrics.registry.Expose();
  EXPECT_TRUE(Has(text, R"(autodist_runtime_sent_bytes_total{channel="parameter_server"} 1000)"));
  EXPECT_TRUE(Has(text, R"(autodist_runtime_sent_bytes_total{channel="all_reduce"} 0)"));
  EXPECT_TRUE(Has(text, R"(autodist_runtime_received_bytes_total{channel="all_reduce"} 24)"));
  EXPECT_TRUE(Has(text, R"(autodist_runtime_all_reduce_duration_seconds_count{group="group-1"} 1)"))
      << text;
  EXPECT_TRUE(Has(text, R"(autodist_runtime_step_duration_seconds_bucket{le="0.0512"} 1)")) << text;
  EXPECT_TRUE(Has(text, R"(autodist_runtime_step_duration_seconds_bucket{le="0.0256"} 0)"));
  EXPECT_TRUE(Has(text, "autodist_runtime_steps_total 1"));
}

TEST(RuntimeMetricsTest, TheProcessSaysWhichMemberItIs) {
  SetMemberInfo("fmnist", "ps-1", "ps");
  EXPECT_TRUE(Has(ProcessMetrics().registry.Expose(),
                  R"(autodist_runtime_member_info{job="fmnist",member="ps-1",role="ps"} 1)"));
  EXPECT_EQ(&ProcessMetrics(), &ProcessMetrics());
}

TEST(RuntimeMetricsTest, ScopedHelpersObserveAndRestore) {
  RuntimeMetrics metrics;
  {
    const ScopedGaugeIncrement waiting(metrics.ps_waiting_calls);
    const ScopedGaugeIncrement another(metrics.ps_waiting_calls);
    EXPECT_EQ(metrics.ps_waiting_calls.Value(), 2);
    const ScopedDuration timed(metrics.ps_apply_duration);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(metrics.ps_waiting_calls.Value(), 0);
  EXPECT_EQ(metrics.ps_apply_duration.CumulativeCounts().back(), 1U);
  EXPECT_GE(metrics.ps_apply_duration.Sum(), 0.002);
  EXPECT_LT(metrics.ps_apply_duration.Sum(), 10);
}

}  // namespace
}  // namespace autodist::observe

// The operator's metric names (operator_metrics.h) as the registry exposes them.
#include "operator/controller/operator_metrics.h"

#include <gtest/gtest.h>

#include "runtime/observe/metrics.h"

namespace autodist::controller {
namespace {

using observe::Registry;

TEST(OperatorMetricsTest, Names) {
  Registry registry;
  OperatorMetrics metrics(registry);
  metrics.jobs_created.With({"default"}).Inc();
  metrics.jobs.With({"Running"}).Set(2);
  metrics.ClientObserver()("create", kube::resources::kPods, 409, std::chrono::milliseconds(3));
  metrics.ClientObserver()("get", kube::resources::kPods, 200, std::chrono::milliseconds(3));
  const std::string text = registry.Expose();
  for (const char* line : {"autodist_operator_jobs_created_total{namespace=\"default\"} 1",
                           "autodist_operator_jobs{state=\"Running\"} 2",
                           "autodist_operator_api_errors_total{verb=\"create\",resource=\"pods\","
                           "code=\"409\"} 1",
                           "autodist_operator_leader 0",
                           "# TYPE autodist_operator_reconcile_duration_seconds histogram",
                           "# TYPE autodist_operator_workqueue_depth gauge",
                           "# TYPE autodist_operator_jobs_successful_total counter",
                           "# TYPE autodist_operator_jobs_failed_total counter",
                           "# TYPE autodist_operator_jobs_restarted_total counter"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  EXPECT_EQ(text.find("code=\"200\""), std::string::npos);
}

}  // namespace
}  // namespace autodist::controller

// The metrics registry's Prometheus text exposition and the /metrics, /healthz and /readyz
// endpoints.
#include "operator/controller/metrics.h"

#include <gtest/gtest.h>

#include "operator/controller/operability_server.h"
#include "operator/controller/operator_metrics.h"
#include "runtime/common/error.h"
#include "tests/k8s/test_util.h"

namespace autodist::controller {
namespace {

TEST(MetricsTest, TextExpositionOfCountersGaugesAndHistograms) {
  Registry registry;
  auto& created = registry.AddCounter("jobs_created_total", "Jobs created", {"namespace"});
  auto& depth = registry.AddGauge("queue_depth", "Keys waiting");
  auto& latency = registry.AddHistogram("reconcile_seconds", "Reconcile latency", {0.1, 1});
  created.With({"team-a"}).Inc();
  created.With({"team-a"}).Inc(2);
  created.With({"b\"\\\n"}).Inc();
  depth.With().Set(7.5);
  latency.With().Observe(0.05);
  latency.With().Observe(0.1);  // bucket bounds are inclusive
  latency.With().Observe(3);
  EXPECT_EQ(registry.Expose(),
            "# HELP jobs_created_total Jobs created\n"
            "# TYPE jobs_created_total counter\n"
            "jobs_created_total{namespace=\"b\\\"\\\\\\n\"} 1\n"
            "jobs_created_total{namespace=\"team-a\"} 3\n"
            "# HELP queue_depth Keys waiting\n"
            "# TYPE queue_depth gauge\n"
            "queue_depth 7.5\n"
            "# HELP reconcile_seconds Reconcile latency\n"
            "# TYPE reconcile_seconds histogram\n"
            "reconcile_seconds_bucket{le=\"0.1\"} 2\n"
            "reconcile_seconds_bucket{le=\"1\"} 2\n"
            "reconcile_seconds_bucket{le=\"+Inf\"} 3\n"
            "reconcile_seconds_sum 3.15\n"
            "reconcile_seconds_count 3\n");
}

TEST(MetricsTest, LabeledHistogramsAndUnusedFamilies) {
  Registry registry;
  auto& h = registry.AddHistogram("latency_seconds", "help\nwith newline", {1}, {"controller"});
  registry.AddCounter("unused_total", "never incremented", {"x"});
  registry.AddCounter("plain_total", "unlabeled: exposed as 0 from the start");
  h.With({"jobs"}).Observe(2);
  const std::string text = registry.Expose();
  EXPECT_NE(text.find("# HELP latency_seconds help\\nwith newline\n"), std::string::npos);
  EXPECT_NE(text.find("latency_seconds_bucket{controller=\"jobs\",le=\"1\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("latency_seconds_bucket{controller=\"jobs\",le=\"+Inf\"} 1\n"),
            std::string::npos);
  // A labeled family nobody used yet: HELP and TYPE only (it sorts last here).
  EXPECT_TRUE(text.ends_with("# TYPE unused_total counter\n")) << text;
  EXPECT_NE(text.find("plain_total 0\n"), std::string::npos);
}

TEST(MetricsTest, RejectsBadNamesDuplicatesAndWrongArity) {
  Registry registry;
  EXPECT_THROW(registry.AddCounter("1bad", "x"), Error);
  EXPECT_THROW(registry.AddCounter("ok_total", "x", {"__reserved"}), Error);
  EXPECT_THROW(registry.AddHistogram("h", "x", {1}, {"le"}), Error);
  EXPECT_THROW(registry.AddHistogram("h2", "x", {2, 1}), Error);
  auto& c = registry.AddCounter("c_total", "x", {"a"});
  EXPECT_THROW(registry.AddGauge("c_total", "x"), Error);
  EXPECT_THROW(c.With({}), Error);
  EXPECT_THROW(c.With({"1"}).Inc(-1), Error);
}

TEST(MetricsTest, OperatorMetricNames) {
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

TEST(OperabilityServerTest, ServesMetricsHealthAndReadiness) {
  Registry registry;
  registry.AddGauge("up", "1").With().Set(1);
  OperabilityServer server(OperabilityOptions{"127.0.0.1", 0}, registry);
  std::atomic<bool> synced{false};
  server.AddHealthCheck("ping", [] { return true; });
  server.AddReadyCheck("informers-synced", [&] { return synced.load(); });
  server.AddReadyCheck("leader-or-standby", [] { return true; });
  server.Start();
  using k8s::testing::HttpCall;

  auto metrics = HttpCall(server.url(), "GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.raw.find("up 1\n"), std::string::npos);
  bool typed = false;
  for (const auto& [name, value] : metrics.headers) {
    typed = typed || (name == "Content-Type" && value.find("version=0.0.4") != std::string::npos);
  }
  EXPECT_TRUE(typed);

  EXPECT_EQ(HttpCall(server.url(), "GET", "/healthz").status, 200);
  auto ready = HttpCall(server.url(), "GET", "/readyz");
  EXPECT_EQ(ready.status, 500);
  EXPECT_NE(ready.raw.find("[-]informers-synced failed"), std::string::npos) << ready.raw;
  EXPECT_NE(ready.raw.find("[+]leader-or-standby ok"), std::string::npos);
  synced = true;
  ready = HttpCall(server.url(), "GET", "/readyz");
  EXPECT_EQ(ready.status, 200);
  EXPECT_NE(ready.raw.find("readyz check passed"), std::string::npos);
  EXPECT_EQ(HttpCall(server.url(), "GET", "/nope").status, 404);

  server.AddHealthCheck("wedged", []() -> bool { throw std::runtime_error("worker stuck 5m"); });
  auto health = HttpCall(server.url(), "GET", "/healthz");
  EXPECT_EQ(health.status, 500);
  EXPECT_NE(health.raw.find("[-]wedged failed: worker stuck 5m"), std::string::npos);
  server.Stop();
}

TEST(OperabilityServerTest, ParsesTheChartsBindAddress) {
  const auto all = ParseBindAddress(":8080");
  EXPECT_EQ(all.address, "0.0.0.0");
  EXPECT_EQ(all.port, 8080);
  const auto local = ParseBindAddress("127.0.0.1:9090");
  EXPECT_EQ(local.address, "127.0.0.1");
  EXPECT_EQ(local.port, 9090);
  EXPECT_THROW(ParseBindAddress("8080"), Error);
  EXPECT_THROW(ParseBindAddress(":http"), Error);
}

}  // namespace
}  // namespace autodist::controller

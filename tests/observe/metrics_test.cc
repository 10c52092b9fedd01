// The metrics registry's Prometheus text exposition and the /metrics, /healthz and /readyz
// endpoints.
#include "runtime/observe/metrics.h"

#include <gtest/gtest.h>

#include "runtime/common/error.h"
#include "runtime/observe/operability_server.h"
#include "tests/observe/http_get.h"

namespace autodist::observe {
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

TEST(OperabilityServerTest, ServesMetricsHealthAndReadiness) {
  Registry registry;
  registry.AddGauge("up", "1").With().Set(1);
  OperabilityServer server(OperabilityOptions{"127.0.0.1", 0}, registry);
  std::atomic<bool> synced{false};
  server.AddHealthCheck("ping", [] { return true; });
  server.AddReadyCheck("informers-synced", [&] { return synced.load(); });
  server.AddReadyCheck("leader-or-standby", [] { return true; });
  server.Start();
  // The reply's status and body, or status 0 when the server did not answer.
  const auto get = [&](const std::string& path) {
    return testing::HttpGet(server.port(), path).value_or(testing::HttpReply{});
  };

  const auto metrics = get("/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("up 1\n"), std::string::npos);
  EXPECT_NE(metrics.head.find("Content-Type: text/plain; version=0.0.4"), std::string::npos)
      << metrics.head;

  EXPECT_EQ(get("/healthz").status, 200);
  auto ready = get("/readyz");
  EXPECT_EQ(ready.status, 500);
  EXPECT_NE(ready.body.find("[-]informers-synced failed"), std::string::npos) << ready.body;
  EXPECT_NE(ready.body.find("[+]leader-or-standby ok"), std::string::npos);
  synced = true;
  ready = get("/readyz");
  EXPECT_EQ(ready.status, 200);
  EXPECT_NE(ready.body.find("readyz check passed"), std::string::npos);
  EXPECT_EQ(get("/nope").status, 404);

  server.AddHealthCheck("wedged", []() -> bool { throw std::runtime_error("worker stuck 5m"); });
  const auto health = get("/healthz");
  EXPECT_EQ(health.status, 500);
  EXPECT_NE(health.body.find("[-]wedged failed: worker stuck 5m"), std::string::npos);
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
}  // namespace autodist::observe

// The reconcile loop: outcomes (success, error, requeue, requeue-after), one key never on two
// workers at once, keys from informer events, metrics.
#include "operator/controller/controller.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "operator/controller/operator_metrics.h"
#include "runtime/common/error.h"
#include "tests/operator/fake_cluster.h"

namespace autodist::controller {
namespace {

using kube::testing::Eventually;
using std::chrono::milliseconds;

ControllerOptions Options(int workers) {
  ControllerOptions options;
  options.name = "test";
  options.workers = workers;
  options.backoff = BackoffPolicy{milliseconds(1), milliseconds(20)};
  return options;
}

TEST(ControllerTest, SameKeyIsNeverReconciledConcurrently) {
  std::mutex mutex;
  std::set<std::string> running;
  std::map<std::string, int> done;
  std::atomic<bool> overlap{false};
  std::atomic<int> max_parallel{0};
  Controller controller(Options(4), [&](const std::string& key) {
    {
      std::lock_guard lock(mutex);
      if (!running.insert(key).second) overlap = true;
      max_parallel = std::max<int>(max_parallel, static_cast<int>(running.size()));
    }
    std::this_thread::sleep_for(milliseconds(2));
    std::lock_guard lock(mutex);
    running.erase(key);
    ++done[key];
    return Result{};
  });
  controller.Start();
  // Hammer five keys from several threads while four workers run.
  std::vector<std::thread> producers;
  for (int p = 0; p < 4; ++p) {
    producers.emplace_back([&] {
      for (int i = 0; i < 200; ++i) controller.queue().Add("k" + std::to_string(i % 5));
    });
  }
  for (auto& p : producers) p.join();
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard lock(mutex);
    return controller.queue().Len() == 0 && running.empty() && done.size() == 5;
  }));
  controller.Stop();
  EXPECT_FALSE(overlap);
  EXPECT_GT(max_parallel, 1);  // different keys did run in parallel
  // De-duplication: far fewer reconciles than the 800 adds.
  int total = 0;
  for (const auto& [key, n] : done) total += n;
  EXPECT_LT(total, 800);
}

TEST(ControllerTest, ErrorsAndRequeuesRetryWithBackoffSuccessForgets) {
  std::atomic<int> calls{0};
  Controller controller(Options(1), [&](const std::string&) -> Result {
    const int n = ++calls;
    if (n <= 2) Fail(ErrorCode::kUnavailable, "the API server is down (call {})", n);
    if (n == 3) return Result{.requeue = true};
    if (n == 4) return Result{.requeue_after = milliseconds(10)};
    return Result{};
  });
  controller.Start();
  controller.queue().Add("default/job");
  ASSERT_TRUE(Eventually([&] { return calls == 5; }));
  EXPECT_EQ(controller.queue().NumRequeues("default/job"), 0);  // forgotten after success
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(calls, 5);  // and not retried again
  controller.Stop();
}

TEST(ControllerTest, MetricsCountOutcomesAndLatency) {
  observe::Registry registry;
  OperatorMetrics metrics(registry);
  ControllerOptions options = Options(2);
  options.metrics = metrics.ForController();
  std::atomic<int> calls{0};
  Controller controller(options, [&](const std::string& key) -> Result {
    ++calls;
    if (key == "bad") throw std::runtime_error("boom");
    return {};
  });
  controller.Start();
  controller.queue().Add("good");
  ASSERT_TRUE(Eventually([&] { return calls == 1; }));
  controller.queue().Add("bad");
  ASSERT_TRUE(Eventually([&] { return calls >= 3; }));
  controller.Stop();
  EXPECT_EQ(metrics.reconciles.With({"test", "success"}).Value(), 1);
  EXPECT_GE(metrics.reconciles.With({"test", "error"}).Value(), 2);
  EXPECT_GE(metrics.reconcile_duration.With({"test"}).CumulativeCounts().back(), 3u);
  const std::string text = registry.Expose();
  EXPECT_NE(
      text.find("autodist_operator_reconcile_total{controller=\"test\",result=\"success\"} 1"),
      std::string::npos)
      << text;
}

TEST(ControllerTest, EnqueueHandlersMapObjectsToKeys) {
  Controller controller(Options(1), [](const std::string&) { return Result{}; });
  const nlohmann::json pod = {
      {"metadata",
       {{"name", "job-worker-0"},
        {"namespace", "team"},
        {"ownerReferences",
         {{{"kind", "AutoDistJob"}, {"name", "job"}, {"controller", true}, {"uid", "u1"}},
          {{"kind", "Other"}, {"name", "x"}, {"controller", false}, {"uid", "u2"}}}}}}};
  controller.EnqueueObject().on_add(pod);
  controller.EnqueueOwner("AutoDistJob").on_delete(pod);
  EXPECT_EQ(controller.queue().Get(), "team/job-worker-0");
  EXPECT_EQ(controller.queue().Get(), "team/job");
  EXPECT_EQ(controller.queue().Len(), 0u);
}

TEST(ControllerTest, BatchedOwnerEventsJoinOneReconcile) {
  std::atomic<int> reconciles{0};
  Controller controller(Options(1), [&](const std::string&) {
    ++reconciles;
    return Result{};
  });
  const auto child = [](const std::string& name) {
    return nlohmann::json{
        {"metadata",
         {{"name", name},
          {"namespace", "team"},
          {"ownerReferences",
           {{{"kind", "AutoDistJob"}, {"name", "job"}, {"controller", true}, {"uid", "u1"}}}}}}};
  };
  const EventHandler batched = controller.EnqueueOwner("AutoDistJob", milliseconds(50));
  // Ten children of one job come back within the window: their owner is queued once, when the
  // window of the first has passed.
  for (int i = 0; i < 10; ++i) batched.on_add(child("job-worker-" + std::to_string(i)));
  EXPECT_EQ(controller.queue().Len(), 0u);
  EXPECT_EQ(controller.queue().Delayed(), 1u);
  controller.Start();
  ASSERT_TRUE(Eventually([&] { return reconciles == 1; }));
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(reconciles, 1);
}

TEST(ControllerTest, StopWaitsForTheRunningReconcileOnly) {
  std::atomic<bool> started{false};
  Controller controller(Options(2), [&](const std::string&) {
    started = true;
    std::this_thread::sleep_for(milliseconds(50));
    return Result{};
  });
  controller.Start();
  for (int i = 0; i < 100; ++i) controller.queue().Add(std::to_string(i));
  ASSERT_TRUE(Eventually([&] { return started.load(); }));
  const auto start = std::chrono::steady_clock::now();
  controller.Stop();
  // The two in-flight reconciles finish; the 98 queued keys are not worked off.
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(500));
}

}  // namespace
}  // namespace autodist::controller

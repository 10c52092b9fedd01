// The operator against an unreliable control plane, end to end: restarted while a job's pods
// run (it adopts them, creating and deleting nothing), its watches dropped and the history they
// would resume from compacted away (410 Gone: it relists), and API errors (500, 503, 429) on its
// writes, lists and watches (it retries). Every job still succeeds.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "tests/k8s/store.h"
#include "tests/operator_e2e/e2e_fixture.h"

namespace autodist::app::e2e {
namespace {

using std::chrono::seconds;

std::map<std::string, std::string> UidsByName(const std::vector<nlohmann::json>& pods) {
  std::map<std::string, std::string> uids;
  for (const nlohmann::json& pod : pods) {
    uids[pod["metadata"].value("name", "")] = pod["metadata"].value("uid", "");
  }
  return uids;
}

long Requests(const nlohmann::json& stats, const std::string& verb, const std::string& resource) {
  const nlohmann::json& requests = stats.at("requests");
  if (!requests.contains(verb) || !requests.at(verb).contains(resource)) return 0;
  return requests.at(verb).at(resource).get<long>();
}

TEST_F(OperatorEndToEnd, OperatorRestartedMidJobAdoptsItsPods) {
  const std::string name = "fmnist-op-restart";
  JobManifest manifest;
  manifest.name = name;
  // Long enough to outlast the operator's restart below (about a second) on a fast machine.
  manifest.steps = 1000;
  manifest.log_interval_steps = 5;
  manifest.backoff_limit = 0;  // a lost pod would fail the job rather than hide in a restart
  const std::shared_ptr<PodEvents> events = RecordPods(name);
  Apply(manifest.ToYaml());
  ASSERT_TRUE(WaitForCondition(name, "Running"));
  ASSERT_TRUE(WaitFor(name, "progress from the first operator", seconds(60),
                      [&] { return StepOf(Job(name)) > 0; }));
  const std::map<std::string, std::string> uids = UidsByName(Pods(name));
  ASSERT_EQ(uids.size(), 3u) << Dump(name);

  // Down, while the pods train on.
  StopOperator();
  const int step_when_stopped = StepOf(Job(name));
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  EXPECT_FALSE(ConditionTrue(Job(name), "Succeeded"));  // nobody judges the pods meanwhile
  StartOperator();  // new client, caches and queue: it knows the job only from the API
  // The chief still ran when the new operator took over (else the test proves little).
  EXPECT_EQ(Pod(name + "-worker-0")["status"].value("phase", ""), "Running") << Dump(name);
  EXPECT_TRUE(WaitFor(name, "progress from the new operator", seconds(60), [&] {
    const nlohmann::json job = Job(name);
    return StepOf(job) > step_when_stopped || ConditionTrue(job, "Succeeded");
  }));

  ASSERT_TRUE(WaitForCondition(name, "Succeeded"));
  const nlohmann::json job = Job(name);
  EXPECT_EQ(job["status"].value("restartCount", -1), 0) << job.dump(2);
  EXPECT_TRUE(WaitForMembersSucceeded(name));
  // Every pod made once, none deleted, never more than three: the same pods all along.
  const PodEvents::Summary summary = events->summary();
  EXPECT_EQ(summary.added.size(), 3u) << ::testing::PrintToString(summary.added);
  EXPECT_TRUE(summary.deleted.empty()) << ::testing::PrintToString(summary.deleted);
  EXPECT_EQ(summary.max_alive, 3u);
  EXPECT_EQ(UidsByName(Pods(name)), uids);
  EXPECT_TRUE(WaitForCount(
      name, "jobs_successful", [&] { return metrics_->jobs_successful.With({"default"}).Value(); },
      1));
}

TEST_F(OperatorEndToEnd, DroppedWatchesAndCompactedHistoryAreRecovered) {
  const std::string name = "fmnist-watch-drop";
  JobManifest manifest;
  manifest.name = name;
  manifest.steps = 200;
  manifest.log_interval_steps = 5;
  manifest.backoff_limit = 0;
  Apply(manifest.ToYaml());
  ASSERT_TRUE(WaitForCondition(name, "Running"));
  // The job is held where it is (its processes stopped, well within their 10 s heartbeat
  // timeout) so that it cannot finish before the operator is blind: the test does not race the
  // training (it used to wait for step 100 and lose to a fast machine).
  const std::vector<std::string> members = {name + "-worker-0", name + "-worker-1", name + "-ps-0"};
  for (const std::string& member : members) ASSERT_TRUE(SignalRuntime(member, SIGSTOP)) << member;
  ASSERT_FALSE(ConditionTrue(Job(name), "Succeeded")) << "finished before it could be held";
  const nlohmann::json before = server_->faults().Stats();

  // Every watch dropped, the job and a pod changed while none can be opened again, and the
  // history forgotten: the informers come back to 410 Gone and relist.
  const nlohmann::json no_watches = {
      {"failures",
       {{{"verb", "watch"}, {"resource", "pods"}, {"code", 500}, {"count", 100000}},
        {{"verb", "watch"}, {"resource", "autodistjobs"}, {"code", 500}, {"count", 100000}}}}};
  server_->faults().Configure(no_watches);
  server_->store().CloseAllWatches();
  ASSERT_EQ(Kubectl("annotate adj " + name + " e2e/dropped=yes").exit_code, 0);
  ASSERT_EQ(Kubectl("label pod " + members[0] + " e2e/dropped=yes").exit_code, 0);
  server_->store().CompactHistory();
  server_->faults().Configure({{"reset", true}});
  ASSERT_TRUE(WaitFor(name, "the informers to relist", seconds(30), [&] {
    const nlohmann::json now = server_->faults().Stats();
    return Requests(now, "list", "pods") > Requests(before, "list", "pods") &&
           Requests(now, "list", "autodistjobs.autodist.io") >
               Requests(before, "list", "autodistjobs.autodist.io");
  }));

  // Now the operator goes blind to pods and jobs, and the pods finish: the watches are dropped
  // and cannot be opened again. The chief's completion happens while nobody watches, and the
  // history holding it is compacted away before the watches may return: only a relist can tell
  // the operator that the job succeeded.
  server_->faults().Configure(no_watches);
  server_->store().CloseAllWatches();
  for (const std::string& member : members) ASSERT_TRUE(SignalRuntime(member, SIGCONT)) << member;
  ASSERT_TRUE(WaitFor(name, "the pods to finish", seconds(60), [&] {
    const std::vector<nlohmann::json> pods = Pods(name);
    if (pods.size() != 3) return false;
    for (const nlohmann::json& pod : pods) {
      if (pod["status"].value("phase", "") != "Succeeded") return false;
    }
    return true;
  }));
  // And a user edits the job meanwhile (kubectl's get and patch are not faulted).
  const CommandResult annotated = Kubectl("annotate adj " + name + " e2e/while-blind=yes");
  EXPECT_EQ(annotated.exit_code, 0) << annotated.output;
  EXPECT_FALSE(ConditionTrue(Job(name), "Succeeded")) << "the operator saw through a broken watch";
  const nlohmann::json blind = server_->faults().Stats();
  server_->store().CompactHistory();
  server_->faults().Configure({{"reset", true}});

  ASSERT_TRUE(WaitForCondition(name, "Succeeded", seconds(60)));
  const nlohmann::json after = server_->faults().Stats();
  // Both informers relisted again: what they missed was compacted away.
  EXPECT_GE(Requests(after, "list", "pods") - Requests(blind, "list", "pods"), 1) << after.dump(2);
  EXPECT_GE(Requests(after, "list", "autodistjobs.autodist.io") -
                Requests(blind, "list", "autodistjobs.autodist.io"),
            1)
      << after.dump(2);
  EXPECT_TRUE(WaitForMembersSucceeded(name));
  const nlohmann::json job = Job(name);
  EXPECT_EQ(job["status"].value("restartCount", -1), 0) << job.dump(2);
  EXPECT_EQ(job["status"]["progress"].value("step", 0), 200) << job.dump(2);
  EXPECT_EQ(CountObjects("pods", name), 3u);
}

TEST_F(OperatorEndToEnd, AnUnreachableCoordinatorDelaysNoReconcile) {
  const std::string stuck = "fmnist-coord-stuck";
  JobManifest first;
  first.name = stuck;
  first.steps = 5000;  // runs while the other job does
  Apply(first.ToYaml());
  ASSERT_TRUE(WaitForCondition(stuck, "Running"));
  // The job's coordinator stops answering, as behind a blackholing network: its process is
  // stopped, while the kernel still completes connections to its port, so every progress read
  // of it waits out its timeout (1 s). (The other members notice only after their heartbeat
  // timeout, 10 s, longer than this test needs.)
  const std::string chief = stuck + "-worker-0";
  ASSERT_TRUE(SignalRuntime(chief, SIGSTOP));

  // Another job is reconciled meanwhile, start to end. (One that makes no pods: jobs of one test
  // share the fixture's ConfigMap mount path, so two running at once would read each other's
  // manifests.)
  const std::string name = "fmnist-on-time";
  JobManifest second;
  second.name = name;
  second.optimizer_options = {"momentum: 0.9"};  // not an Adam option: InvalidSpec
  Apply(second.ToYaml());
  ASSERT_TRUE(WaitForCondition(name, "Failed", seconds(30)));
  // The blackholed job is reconciled too (a change to it queues it), and its progress reads are
  // made meanwhile, each waiting out its second: give them time.
  ASSERT_EQ(Kubectl("annotate adj " + stuck + " example.com/poke=1").exit_code, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_TRUE(ConditionTrue(Job(stuck), "Running")) << Dump(stuck);
  // No reconcile waited on a read: every one took under half a second (a read of the blackholed
  // coordinator on a reconcile worker took a whole second).
  const std::vector<double>& bounds = metrics_->reconcile_duration.With({"autodistjob"}).bounds();
  const std::vector<uint64_t> counts =
      metrics_->reconcile_duration.With({"autodistjob"}).CumulativeCounts();
  size_t half_second = 0;
  while (half_second < bounds.size() && bounds[half_second] < 0.5) ++half_second;
  ASSERT_LT(half_second, bounds.size());
  EXPECT_EQ(counts[half_second], counts.back())
      << counts.back() - counts[half_second] << " reconciles took over " << bounds[half_second]
      << " s";
  EXPECT_GE(counts.back(), 4u);  // both jobs
  EXPECT_TRUE(SignalRuntime(chief, SIGCONT));
  ASSERT_EQ(Kubectl("delete adj " + stuck).exit_code, 0);
}

TEST_F(OperatorEndToEnd, ApiErrorsAreRetried) {
  const std::string name = "fmnist-api-errors";
  JobManifest manifest;
  manifest.name = name;
  manifest.steps = 100;
  manifest.log_interval_steps = 5;
  manifest.backoff_limit = 0;
  // The operator's writes fail first: every kind of child, the status, an Event.
  const nlohmann::json writes = {
      {"failures",
       {{{"verb", "create"}, {"resource", "configmaps"}, {"code", 500}},
        {{"verb", "create"}, {"resource", "services"}, {"code", 503}},
        {{"verb", "create"}, {"resource", "pods"}, {"code", 500}, {"count", 2}},
        {{"verb", "update"},
         {"resource", "autodistjobs/status"},
         {"code", 429},
         {"retryAfterSeconds", 1},
         {"count", 2}},
        {{"verb", "create"}, {"resource", "events"}, {"code", 500}}}}};
  server_->faults().Configure(writes);
  Apply(manifest.ToYaml());
  ASSERT_TRUE(WaitForCondition(name, "Running"));

  // Then its reads: the pod watch is dropped and cannot be opened again at once, the history is
  // gone (410), and the relist answers 429 and 500 before it succeeds.
  server_->faults().Configure(
      {{"failures",
        {{{"verb", "watch"}, {"resource", "pods"}, {"code", 500}, {"count", 2}},
         {{"verb", "list"}, {"resource", "pods"}, {"code", 429}, {"retryAfterSeconds", 1}},
         {{"verb", "list"}, {"resource", "pods"}, {"code", 500}}}}});
  server_->store().CompactHistory();
  server_->store().CloseAllWatches();

  ASSERT_TRUE(WaitForCondition(name, "Succeeded"));
  const nlohmann::json stats = server_->faults().Stats();
  const nlohmann::json left = server_->faults().State();
  // Every fault fired: 7 on writes, 4 on reads.
  EXPECT_EQ(stats.value("faultsInjected", 0L), 11) << stats.dump(2) << left.dump(2);
  EXPECT_TRUE(left.value("failures", nlohmann::json::array()).empty()) << left.dump(2);

  const nlohmann::json job = Job(name);
  EXPECT_EQ(job["status"].value("restartCount", -1), 0) << job.dump(2);
  EXPECT_TRUE(WaitForMembersSucceeded(name));
  EXPECT_EQ(CountObjects("pods", name), 3u);
  EXPECT_EQ(CountObjects("configmaps", name), 1u);
  EXPECT_EQ(CountObjects("services", name), 1u);
  EXPECT_TRUE(WaitForCount(
      name, "jobs_successful", [&] { return metrics_->jobs_successful.With({"default"}).Value(); },
      1));
}

}  // namespace
}  // namespace autodist::app::e2e

// The run policy besides restarts: backoffLimit, activeDeadlineSeconds,
// ttlSecondsAfterFinished, cleanPodPolicy, suspend and resume.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/reconcile/conditions.h"
#include "reconcile_test_support.h"

namespace autodist::reconcile {
namespace {

using testing::At;
using testing::Cluster;
using testing::Created;
using testing::Deleted;
using ::testing::ElementsAre;
using testing::EventReasons;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::JobObject;
using ::testing::UnorderedElementsAre;

Cluster RunningJob(const nlohmann::json& run_policy) {
  Cluster cluster(JobObject({{"runPolicy", run_policy}}));
  cluster.Reconcile(At(0));
  cluster.SetAllPhases("Running");
  cluster.Reconcile(At(1));
  EXPECT_EQ(cluster.status()["state"], "Running");
  return cluster;
}

// Fails worker 1 with 137 and reconciles until the pods of the next generation run (or the job
// is finished); returns the plan of the failure.
Plan FailAndRecover(Cluster& cluster, int64_t t) {
  cluster.Exit("fmnist-worker-1", 137);
  Plan plan = cluster.Reconcile(At(t));
  if (cluster.status()["state"] == "Restarting") {
    cluster.Reconcile(At(t + 1));
    cluster.SetAllPhases("Running");
    cluster.Reconcile(At(t + 2));
  }
  return plan;
}

TEST(RunPolicyTest, BackoffLimitCountsGangRestarts) {
  Cluster cluster = RunningJob({{"backoffLimit", 2}});
  const Plan first = FailAndRecover(cluster, 10);
  EXPECT_EQ(cluster.status()["restartCount"], 1);
  ASSERT_EQ(first.events.size(), 2U);  // MemberFailed, GangRestart
  EXPECT_THAT(first.events[1].message, HasSubstr("(restart 1 of at most 2)"));
  FailAndRecover(cluster, 20);
  EXPECT_EQ(cluster.status()["restartCount"], 2);
  EXPECT_EQ(cluster.status()["state"], "Running");
  const Plan plan = FailAndRecover(cluster, 30);
  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_EQ(cluster.status()["restartCount"], 2);
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonBackoffLimitExceeded);
  EXPECT_EQ(cluster.ConditionOf(kFailed)["message"],
            "pod fmnist-worker-1 (worker-1) failed with exit code 137 (retryable under "
            "restartPolicy OnFailure); the job was restarted 2 time(s), as many as "
            "spec.runPolicy.backoffLimit (2) allows");
  EXPECT_THAT(EventReasons(plan), ElementsAre(kReasonMemberFailed, kReasonBackoffLimitExceeded));
  EXPECT_THAT(plan.deletes, IsEmpty());  // cleanPodPolicy None
  EXPECT_FALSE(cluster.Reconcile(At(40)).HasActions());
}

TEST(RunPolicyTest, BackoffLimitZeroAllowsNoRestart) {
  Cluster cluster = RunningJob({{"backoffLimit", 0}});
  FailAndRecover(cluster, 10);
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonBackoffLimitExceeded);
  EXPECT_EQ(cluster.status()["restartCount"], 0);
}

TEST(RunPolicyTest, ActiveDeadlineFailsTheJobAndStopsItsPods) {
  Cluster cluster(JobObject({{"runPolicy", {{"activeDeadlineSeconds", 600}}}}));
  Plan plan = cluster.Reconcile(At(0));
  EXPECT_EQ(plan.requeue_after, std::chrono::seconds(600));
  cluster.SetAllPhases("Running");
  cluster.Exit("fmnist-worker-1", 0);
  plan = cluster.Reconcile(At(100));
  EXPECT_EQ(plan.requeue_after, std::chrono::seconds(500));
  plan = cluster.Reconcile(At(600));
  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonDeadlineExceeded);
  EXPECT_EQ(cluster.ConditionOf(kFailed)["message"],
            "the job was active longer than spec.runPolicy.activeDeadlineSeconds (600 s) since "
            "2025-01-01T10:00:00Z");
  // Active pods are deleted whatever cleanPodPolicy (None) keeps; the finished one stays.
  EXPECT_THAT(Deleted(plan), UnorderedElementsAre("fmnist-worker-0", "fmnist-ps-0"));
  EXPECT_THAT(EventReasons(plan), ElementsAre(kReasonDeadlineExceeded));
  EXPECT_FALSE(plan.requeue_after.has_value());
  EXPECT_FALSE(cluster.Reconcile(At(700)).HasActions());
}

TEST(RunPolicyTest, TheChiefsSuccessBeatsTheDeadline) {
  Cluster cluster(JobObject({{"runPolicy", {{"activeDeadlineSeconds", 60}}}}));
  cluster.Reconcile(At(0));
  cluster.SetAllPhases("Running");
  cluster.Exit("fmnist-worker-0", 0);
  cluster.Reconcile(At(61));
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
}

TEST(RunPolicyTest, TheDeadlineBeatsARestart) {
  Cluster cluster(JobObject({{"runPolicy", {{"activeDeadlineSeconds", 60}}}}));
  cluster.Reconcile(At(0));
  cluster.SetAllPhases("Running");
  cluster.Exit("fmnist-worker-0", 137);
  cluster.Reconcile(At(61));
  EXPECT_EQ(cluster.ConditionReason(kFailed), kReasonDeadlineExceeded);
  EXPECT_EQ(cluster.status()["restartCount"], 0);
}

TEST(RunPolicyTest, TtlDeletesTheFinishedJob) {
  Cluster cluster = RunningJob({{"ttlSecondsAfterFinished", 300}});
  cluster.Exit("fmnist-worker-0", 0);
  Plan plan = cluster.Reconcile(At(10));
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
  EXPECT_EQ(plan.requeue_after, std::chrono::seconds(300));
  EXPECT_FALSE(plan.delete_job);
  plan = cluster.Reconcile(At(200));
  EXPECT_FALSE(plan.HasActions());
  EXPECT_EQ(plan.requeue_after, std::chrono::seconds(110));
  plan = cluster.Reconcile(At(310));
  EXPECT_TRUE(plan.delete_job);
  EXPECT_THAT(EventReasons(plan), ElementsAre(kReasonTtlExpired));
  EXPECT_TRUE(cluster.job_deleted());
}

TEST(RunPolicyTest, TtlZeroDeletesAtOnce) {
  Cluster cluster = RunningJob({{"ttlSecondsAfterFinished", 0}, {"restartPolicy", "Never"}});
  cluster.Exit("fmnist-ps-0", 1);
  const Plan plan = cluster.Reconcile(At(10));
  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_TRUE(plan.delete_job);
}

TEST(RunPolicyTest, CleanPodPolicyNoneKeepsEveryPod) {
  Cluster cluster = RunningJob({{"cleanPodPolicy", "None"}});
  cluster.Exit("fmnist-worker-0", 0);
  EXPECT_THAT(cluster.Reconcile(At(10)).deletes, IsEmpty());
}

TEST(RunPolicyTest, CleanPodPolicyRunningDeletesOnlyActivePods) {
  Cluster cluster = RunningJob({{"cleanPodPolicy", "Running"}});
  cluster.Exit("fmnist-worker-0", 0);
  cluster.Exit("fmnist-worker-1", 0);
  const Plan plan = cluster.Reconcile(At(10));
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
  EXPECT_THAT(Deleted(plan), ElementsAre("fmnist-ps-0"));
  // The replica counts stay as they were when the job finished.
  EXPECT_EQ(cluster.status()["replicaStatuses"]["PS"]["active"], 1);
  EXPECT_FALSE(cluster.Reconcile(At(11)).HasActions());
}

TEST(RunPolicyTest, CleanPodPolicyAllDeletesEveryPodOnFailureToo) {
  Cluster cluster = RunningJob({{"cleanPodPolicy", "All"}, {"restartPolicy", "Never"}});
  cluster.Exit("fmnist-ps-0", 1);
  const Plan plan = cluster.Reconcile(At(10));
  EXPECT_EQ(cluster.status()["state"], "Failed");
  EXPECT_THAT(Deleted(plan),
              UnorderedElementsAre("fmnist-worker-0", "fmnist-worker-1", "fmnist-ps-0"));
  EXPECT_TRUE(cluster.pods().empty());
  EXPECT_FALSE(cluster.Reconcile(At(11)).HasActions());
}

TEST(RunPolicyTest, CleanUpIsRepeatedUntilThePodsAreGone) {
  Cluster cluster = RunningJob({{"cleanPodPolicy", "All"}});
  cluster.Exit("fmnist-worker-0", 0);
  Plan plan = cluster.Reconcile(At(10), false);
  cluster.Apply(Plan{plan.status, {}, {}, false, {}, std::nullopt});  // the deletes were lost
  plan = cluster.Reconcile(At(11));
  EXPECT_EQ(Deleted(plan).size(), 3U);
  EXPECT_THAT(plan.events, IsEmpty());
}

TEST(RunPolicyTest, SuspendDeletesThePodsAndResumeCreatesThemAgain) {
  Cluster cluster = RunningJob({{"activeDeadlineSeconds", 1000}});
  cluster.job()["spec"]["runPolicy"]["suspend"] = true;
  cluster.job()["metadata"]["generation"] = 2;
  Plan plan = cluster.Reconcile(At(100));
  EXPECT_EQ(cluster.status()["state"], "Suspended");
  EXPECT_EQ(cluster.ConditionReason(kSuspended), kReasonJobSuspended);
  EXPECT_EQ(cluster.ConditionOf(kSuspended)["observedGeneration"], 2);
  EXPECT_EQ(cluster.ConditionStatus(kRunning), "False");
  EXPECT_EQ(cluster.ConditionReason(kRunning), kReasonJobSuspended);
  EXPECT_THAT(Deleted(plan),
              UnorderedElementsAre("fmnist-worker-0", "fmnist-worker-1", "fmnist-ps-0"));
  EXPECT_THAT(EventReasons(plan), ElementsAre(kReasonJobSuspended));
  EXPECT_FALSE(cluster.status().contains("startTime"));
  // Suspended: no deadline runs, nothing is created.
  plan = cluster.Reconcile(At(5000));
  EXPECT_FALSE(plan.HasActions());
  EXPECT_FALSE(plan.requeue_after.has_value());

  cluster.job()["spec"]["runPolicy"]["suspend"] = false;
  cluster.job()["metadata"]["generation"] = 3;
  plan = cluster.Reconcile(At(6000));
  EXPECT_EQ(cluster.ConditionStatus(kSuspended), "False");
  EXPECT_EQ(cluster.ConditionReason(kSuspended), kReasonJobResumed);
  EXPECT_THAT(EventReasons(plan), ElementsAre(kReasonJobResumed));
  EXPECT_EQ(Created(plan, "Pod").size(), 3U);
  EXPECT_EQ(cluster.status()["startTime"], "2025-01-01T11:40:00Z");
  EXPECT_EQ(plan.requeue_after, std::chrono::seconds(1000));  // the deadline starts over
  EXPECT_EQ(cluster.status()["restartCount"], 0);             // a resume is no restart
  cluster.SetAllPhases("Running");
  cluster.Reconcile(At(6001));
  EXPECT_EQ(cluster.status()["state"], "Running");
}

TEST(RunPolicyTest, AJobCreatedSuspendedCompilesButStartsNoPod) {
  Cluster cluster(JobObject({{"runPolicy", {{"suspend", true}}}}));
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_THAT(Created(plan, "ConfigMap"), ElementsAre("fmnist-autodist"));
  EXPECT_EQ(plan.creates.size(), 1U);
  EXPECT_FALSE(cluster.Reconcile(At(1)).HasActions());
  EXPECT_EQ(cluster.models().config_map_reads, 0);
  EXPECT_EQ(cluster.status()["state"], "Suspended");
  EXPECT_EQ(cluster.ConditionStatus(kCompiled), "True");
  EXPECT_FALSE(cluster.ConditionOf(kRunning).contains("type"));
}

}  // namespace
}  // namespace autodist::reconcile

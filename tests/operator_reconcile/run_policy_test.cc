// The run policy besides restarts: backoffLimit, activeDeadlineSeconds,
// ttlSecondsAfterFinished, cleanPodPolicy, suspend and resume.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/reconcile/conditions.h"
#include "operator/reconcile/names.h"
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

// Fails worker 1 (of the current gang) with 137 and reconciles until the pods of the next
// generation run (or the job is finished); returns the plan of the failure.
Plan FailAndRecover(Cluster& cluster, int64_t t) {
  cluster.Exit(PodName("fmnist", Role::kWorker, 1, cluster.status().value("restartCount", 0)), 137);
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
            "pod fmnist-worker-1-r2 (worker-1) failed with exit code 137 (retryable under "
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
  EXPECT_EQ(cluster.status()["replicaStatuses"]["PS"]["active"], 1);
  // Gone with the clean-up of a job whose training completed: counted as succeeded, and the
  // counts stay so.
  cluster.Reconcile(At(11));
  EXPECT_EQ(cluster.status()["replicaStatuses"]["PS"],
            nlohmann::json::parse(R"({"active": 0, "succeeded": 1, "failed": 0})"));
  EXPECT_FALSE(cluster.Reconcile(At(12)).HasActions());
}

TEST(RunPolicyTest, CleanUpTurnsNoReplicaOfASucceededJobIntoAFailure) {
  Cluster cluster = RunningJob({{"cleanPodPolicy", "Running"}});
  cluster.set_graceful_deletion(true);
  cluster.Exit("fmnist-worker-0", 0);
  cluster.Exit("fmnist-worker-1", 0);
  EXPECT_THAT(Deleted(cluster.Reconcile(At(10))), ElementsAre("fmnist-ps-0"));
  // The parameter server stops on the clean-up's SIGTERM (Terminating, then Failed with 143)
  // and goes; at no point is it a failed replica.
  cluster.Reconcile(At(11));
  EXPECT_EQ(cluster.status()["replicaStatuses"]["PS"],
            nlohmann::json::parse(R"({"active": 0, "succeeded": 1, "failed": 0})"));
  cluster.Exit("fmnist-ps-0", 143);
  cluster.Reconcile(At(12));
  EXPECT_EQ(cluster.status()["replicaStatuses"]["PS"],
            nlohmann::json::parse(R"({"active": 0, "succeeded": 1, "failed": 0})"));
  cluster.FinishDeletions();
  EXPECT_FALSE(cluster.Reconcile(At(13)).HasActions());
  EXPECT_EQ(cluster.status()["replicaStatuses"]["Worker"]["succeeded"], 2);
  EXPECT_EQ(cluster.status()["state"], "Succeeded");
}

TEST(RunPolicyTest, APodDeletedWhileTheJobRunsRestartsTheGangAtOnce) {
  Cluster cluster = RunningJob({{"restartPolicy", "OnFailure"}});
  cluster.set_graceful_deletion(true);
  // Someone (a drain, an eviction, kubectl delete) deletes a member's pod; on a node that is gone
  // it stays Terminating, Running as last reported, for good.
  cluster.pods().at("fmnist-worker-1")["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z";
  Plan plan = cluster.Reconcile(At(2));
  EXPECT_EQ(cluster.status()["state"], "Restarting");
  EXPECT_THAT(cluster.ConditionOf(kRestarting)["message"].get<std::string>(),
              HasSubstr("pod fmnist-worker-1 (worker-1) was deleted while the job was running"));
  // The Terminating pod is not deleted again.
  EXPECT_THAT(Deleted(plan), UnorderedElementsAre("fmnist-worker-0", "fmnist-ps-0"));
  plan = cluster.Reconcile(At(3));
  EXPECT_THAT(Created(plan, "Pod"),
              ElementsAre("fmnist-worker-0-r1", "fmnist-worker-1-r1", "fmnist-ps-0-r1"));
}

TEST(RunPolicyTest, AResumedJobWaitsForItsSuspendedPodsToGoWithoutARestart) {
  Cluster cluster = RunningJob({});
  cluster.set_graceful_deletion(true);
  cluster.job()["spec"]["runPolicy"]["suspend"] = true;
  cluster.Reconcile(At(10));
  EXPECT_EQ(cluster.status()["state"], "Suspended");
  cluster.Exit("fmnist-worker-0", 143);  // stopping on the suspension's SIGTERM
  cluster.job()["spec"]["runPolicy"]["suspend"] = false;
  // Its pods are still Terminating: their names are taken, and they are not failures.
  Plan plan = cluster.Reconcile(At(11));
  EXPECT_THAT(Created(plan, "Pod"), IsEmpty());
  EXPECT_THAT(plan.deletes, IsEmpty());
  EXPECT_EQ(cluster.status()["restartCount"], 0);
  EXPECT_NE(cluster.status()["state"], "Restarting");
  cluster.FinishDeletions();
  plan = cluster.Reconcile(At(12));
  EXPECT_THAT(Created(plan, "Pod"),
              UnorderedElementsAre("fmnist-worker-0", "fmnist-worker-1", "fmnist-ps-0"));
  EXPECT_EQ(cluster.status()["restartCount"], 0);
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
  Plan lost;  // the deletes were lost
  lost.status = plan.status;
  cluster.Apply(lost);
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
